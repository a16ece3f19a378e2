#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Foundation
import Testing
import WAT

#if canImport(Glibc)
import Glibc
#endif

/// WebAssembly plug-ins written in WebAssembly text and assembled here, at
/// test time, by WasmKit's WAT (no clang, no wasi-libc): `hello.wasm`
/// answers, fails, cancels, loops, grows its memory without end, traps, and
/// hands the host a pointer outside its memory, one action each.
enum WasmFixture {
    /// The ABI version word a module states: `major << 16 | minor`.
    static let version = 0x1_0000

    /// `hello`'s module; `abiVersion` replaces the version it states, and
    /// `greeting` (8 bytes) the name of `greet`'s reply parameter.
    static func hello(abiVersion: Int = version, extraImport: String = "", greeting: String = "greeting") -> String {
        precondition(greeting.utf8.count == 8)
        return """
        (module
          (import "xcallback" "plugin_info" (func $plugin_info (param i32 i32 i32 i32 i32 i32) (result i32)))
          (import "xcallback" "register_action" (func $register_action (param i32 i32 i32 i32 i32) (result i32)))
          (import "xcallback" "register_pattern" (func $register_pattern (param i32 i32 i32) (result i32)))
          (import "xcallback" "request_parameter" (func $request_parameter (param i32 i32 i32 i32) (result i32)))
          (import "xcallback" "request_argument" (func $request_argument (param i32 i32 i32 i32) (result i32)))
          (import "xcallback" "reply_parameter" (func $reply_parameter (param i32 i32 i32 i32) (result i32)))
          (import "xcallback" "reply_success" (func $reply_success (result i32)))
          (import "xcallback" "reply_error" (func $reply_error (param i32 i32 i32 i32 i32 i32) (result i32)))
          (import "xcallback" "reply_cancel" (func $reply_cancel (result i32)))
          \(extraImport)
          (memory (export "memory") 1)
          (data (i32.const 0) "hello")
          (data (i32.const 16) "1.0.0")
          (data (i32.const 32) "greet")
          (data (i32.const 48) "fail")
          (data (i32.const 64) "cancel")
          (data (i32.const 80) "spin")
          (data (i32.const 96) "bomb")
          (data (i32.const 112) "trap")
          (data (i32.const 128) "badptr")
          (data (i32.const 144) "hello://items/:id")
          (data (i32.const 176) "name")
          (data (i32.const 192) "\(greeting)")
          (data (i32.const 208) "Nope")
          (data (i32.const 224) "it failed")
          (data (i32.const 240) "reason")
          (data (i32.const 256) "id")
          (data (i32.const 272) "a WebAssembly plug-in")
          (func (export "xcallback_abi_version") (result i32) (i32.const \(abiVersion)))
          (func $action (param $at i32) (param $length i32) (param $handler i32)
            (drop (call $register_action (i32.const 0) (i32.const 5) (local.get $at) (local.get $length) (local.get $handler))))
          (func (export "xcallback_register") (result i32)
            (drop (call $plugin_info (i32.const 0) (i32.const 5) (i32.const 16) (i32.const 5) (i32.const 272) (i32.const 21)))
            (call $action (i32.const 32) (i32.const 5) (i32.const 0))
            (call $action (i32.const 48) (i32.const 4) (i32.const 1))
            (call $action (i32.const 64) (i32.const 6) (i32.const 2))
            (call $action (i32.const 80) (i32.const 4) (i32.const 3))
            (call $action (i32.const 96) (i32.const 4) (i32.const 4))
            (call $action (i32.const 112) (i32.const 4) (i32.const 5))
            (call $action (i32.const 128) (i32.const 6) (i32.const 6))
            (call $register_pattern (i32.const 144) (i32.const 17) (i32.const 7)))
          (func (export "xcallback_handle") (param $handler i32) (local $length i32)
            ;; greet: greeting=NAME, or the error Missing
            (if (i32.eq (local.get $handler) (i32.const 0)) (then
              (local.set $length (call $request_parameter (i32.const 176) (i32.const 4) (i32.const 1024) (i32.const 1024)))
              (if (i32.lt_s (local.get $length) (i32.const 0)) (then
                (drop (call $reply_error (i32.const 208) (i32.const 4) (i32.const 176) (i32.const 4) (i32.const 0) (i32.const 0)))
                (return)))
              (drop (call $reply_parameter (i32.const 192) (i32.const 8) (i32.const 1024) (local.get $length)))
              (drop (call $reply_success))
              (return)))
            ;; fail: the error Nope, with reason=it failed
            (if (i32.eq (local.get $handler) (i32.const 1)) (then
              (drop (call $reply_parameter (i32.const 240) (i32.const 6) (i32.const 224) (i32.const 9)))
              (drop (call $reply_error (i32.const 208) (i32.const 4) (i32.const 224) (i32.const 9) (i32.const 0) (i32.const 0)))
              (return)))
            (if (i32.eq (local.get $handler) (i32.const 2)) (then (drop (call $reply_cancel)) (return)))
            ;; spin: loops for ever
            (if (i32.eq (local.get $handler) (i32.const 3)) (then (loop $again (br $again))))
            ;; bomb: grows its memory 16 MiB at a time, for ever
            (if (i32.eq (local.get $handler) (i32.const 4)) (then
              (loop $again (drop (memory.grow (i32.const 256))) (br $again))))
            (if (i32.eq (local.get $handler) (i32.const 5)) (then unreachable))
            ;; badptr: a parameter name at the top of the address space
            (if (i32.eq (local.get $handler) (i32.const 6)) (then
              (drop (call $request_parameter (i32.const -16) (i32.const 100) (i32.const 1024) (i32.const 64)))
              (drop (call $reply_success))
              (return)))
            ;; items/:id: id=ID
            (if (i32.eq (local.get $handler) (i32.const 7)) (then
              (local.set $length (call $request_argument (i32.const 256) (i32.const 2) (i32.const 1024) (i32.const 1024)))
              (drop (call $reply_parameter (i32.const 256) (i32.const 2) (i32.const 1024) (local.get $length)))
              (drop (call $reply_success)))))
        )
        """
    }

    /// Assembles `text` and renames it into `directory/NAME.wasm`, as the
    /// guide installs a plug-in (a running host never sees half a file).
    static func dropIn(_ text: String, as name: String = "hello", in directory: String) throws {
        let temporary = try install(text, as: ".\(name).tmp", in: directory)
        #expect(rename(temporary, directory + "/" + name + ".wasm") == 0)
    }

    /// Assembles `text` into `directory/NAME.wasm` (mode 0644); returns its path.
    @discardableResult
    static func install(_ text: String, as name: String = "hello", in directory: String) throws -> String {
        let bytes = try wat2wasm(text)
        let path = directory + "/" + name + ".wasm"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        return path
    }
}

/// A C plug-in for the wasm ABI, built against `xcallback sdk --wasm` by
/// clang with no C library (`--target=wasm32 -nostdlib`).
enum WasmCPlugin {
    static let source = """
        #include "xcallback-wasm.h"

        XCALLBACK_WASM_PLUGIN()

        static int32_t length(const char *text) { int32_t n = 0; while (text[n]) n++; return n; }
        #define S(text) text, length(text)

        XCALLBACK_WASM_EXPORT(xcallback_register) int32_t xcallback_register(void) {
            xcallback_plugin_info(S("cgreeter"), S("1.0.0"), S("a C plug-in in WebAssembly"));
            return xcallback_register_action(S("cgreet"), S("hello"), 0);
        }

        XCALLBACK_WASM_EXPORT(xcallback_handle) void xcallback_handle(int32_t handler) {
            (void)handler;
            static char name[256], greeting[300];
            int32_t n = xcallback_request_parameter(S("name"), name, sizeof name);
            if (n < 0 || n > (int32_t)sizeof name) {
                xcallback_reply_error(S("MissingName"), S("name is required"), 0, 0);
                return;
            }
            const char *hello = "Hello, ";
            int32_t at = 0;
            for (int32_t i = 0; hello[i]; i++) greeting[at++] = hello[i];
            for (int32_t i = 0; i < n; i++) greeting[at++] = name[i];
            greeting[at++] = '!';
            xcallback_reply_parameter(S("greeting"), greeting, at);
            xcallback_reply_success();
        }
        """

    /// Writes the header (`sdk --wasm`) and the source into `folder`, and
    /// builds `plugins/cgreeter.wasm`; returns clang's complaint, if any.
    static func build(in folder: String, into plugins: String) throws -> String? {
        let header = try xcallback(["sdk", "--wasm"])
        guard header.status.isSuccess else { return "sdk --wasm: \(header.stderr)" }
        try Data(header.stdout.utf8).write(to: URL(fileURLWithPath: folder + "/xcallback-wasm.h"))
        try Data(source.utf8).write(to: URL(fileURLWithPath: folder + "/cgreeter.c"))
        let output = plugins + "/cgreeter.wasm"
        let clang = try ChildProcess(["clang", "--target=wasm32", "-O2", "-fno-builtin", "-nostdlib", "-Wl,--no-entry",
                                      "-I", folder, "-o", output, folder + "/cgreeter.c"], executable: "/usr/bin/env")
        guard clang.waitForExit(timeout: 60) == .exited(0) else { return clang.stderr }
        chmod(output, 0o644)
        return nil
    }
}
#endif
