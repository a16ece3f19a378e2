/// `xcallback new NAME --language wasm`: C built into `NAME.wasm` by clang
/// with no C library (docs/wasm.md), against the header `sdk --wasm` writes.
extension PluginTemplate {
    var wasmFiles: [File] {
        [
            File(path: "\(name).c", text: """
                /*
                 * \(name): an xcallback plug-in in WebAssembly (docs/wasm.md).
                 *   \(scheme)://x-callback-url/hello?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
                 * Built with no C library: strings are (pointer, length) pairs.
                 */
                #include "xcallback-wasm.h"

                XCALLBACK_WASM_PLUGIN()

                static int32_t length(const char *text) { int32_t n = 0; while (text[n]) n++; return n; }
                #define S(text) text, length(text)

                XCALLBACK_WASM_EXPORT(xcallback_register) int32_t xcallback_register(void)
                {
                    xcallback_plugin_info(S("\(name)"), S("0.1.0"), S("Says hello: \(scheme)://x-callback-url/hello?name="));
                    return xcallback_register_action(S("\(scheme)"), S("hello"), 0);
                }

                /* One handler at a time per instance: static buffers are the instance's own. */
                static char given[4096], greeting[4096 + sizeof "Hello, !"];

                XCALLBACK_WASM_EXPORT(xcallback_handle) void xcallback_handle(int32_t handler)
                {
                    (void)handler;
                    int32_t n = xcallback_request_parameter(S("name"), given, sizeof given);
                    if (n < 0) {
                        /* An empty domain: this plug-in's name. */
                        xcallback_reply_error(S("ParameterError"), S("missing required parameter 'name'"), 0, 0);
                        return;
                    }
                    if (n > (int32_t)sizeof given) {
                        xcallback_reply_error(S("ParameterError"), S("the name is too long"), 0, 0);
                        return;
                    }
                    const char *hello = "Hello, ";
                    int32_t at = 0;
                    for (int32_t i = 0; hello[i]; i++) greeting[at++] = hello[i];
                    for (int32_t i = 0; i < n; i++) greeting[at++] = given[i];
                    greeting[at++] = '!';
                    xcallback_reply_parameter(S("greeting"), greeting, at);
                    xcallback_reply_success();
                }

                """),
            File(path: "Makefile", text: """
                # `make` builds \(name).wasm; `make check` and `make run` try it.
                # XCALLBACK is the xcallback that made this project; another: make XCALLBACK=/path/to/xcallback
                # CLANG: clang with the wasm32 target and wasm-ld (the Swift toolchain's, or Debian's clang and lld).
                XCALLBACK ?= \(binaryForMake)
                CLANG ?= clang
                CFLAGS ?= -O2 -Wall -Wextra -Wmissing-prototypes
                # -fno-builtin: no calls to memcpy or memset, which a module without a C library lacks.
                WASMFLAGS = --target=wasm32 -fno-builtin -nostdlib -Wl,--no-entry

                \(name).wasm: \(name).c xcallback-wasm.h
                \t$(CLANG) $(WASMFLAGS) $(CFLAGS) -I. $< -o $@
                \tchmod 0644 $@

                xcallback-wasm.h:
                \t$(XCALLBACK) sdk --wasm > $@

                check: \(name).wasm
                \t$(XCALLBACK) check ./\(name).wasm

                run: \(name).wasm
                \t$(XCALLBACK) run --plugins . < requests.txt

                clean:
                \trm -f \(name).wasm xcallback-wasm.h

                .PHONY: check run clean

                """),
            readme(build: "make", library: "\(name).wasm",
                   kitNote: "`make` writes `xcallback-wasm.h` with `\(binary) sdk --wasm` and builds with clang --target=wasm32 (`make XCALLBACK=... CLANG=...` names others).",
                   mode: "0644",
                   sandboxNote: """
                       The module reaches only its own memory and the host's functions, in the host (`--isolation none`)
                       or in a sandboxed worker; `\(name).caps.toml` beside it may set its memory ceiling (`memory`, MiB).
                       """),
        ]
    }
}
