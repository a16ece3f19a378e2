import Foundation
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

    /// `hello`'s module; `abiVersion` replaces the version it states.
    static func hello(abiVersion: Int = version, extraImport: String = "") -> String {
        """
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
          (data (i32.const 192) "greeting")
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
