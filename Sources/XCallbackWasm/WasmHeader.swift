#if Wasm  // the package's Wasm trait: swift build --traits Wasm
/// The C header of the wasm ABI (`xcallback sdk --wasm`): every host
/// function of ``WasmImports`` declared with clang's import attributes, and
/// a macro for the version export. A test holds it to the import table
/// (each function, with its number of parameters).
public enum WasmHeader {
    public static let text = """
        /* xcallback-wasm.h: the wasm ABI \(WasmABI.major).\(WasmABI.minor) of xcallback (docs/wasm.md), for C
         * built into a WebAssembly module, e.g. with the Swift toolchain's or Debian's clang:
         *
         *     clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o NAME.wasm NAME.c
         *
         * (or --target=wasm32-wasi with wasi-libc; the host provides no WASI yet, so
         * a module must not call into it). Printed by `xcallback sdk --wasm`.
         *
         * Strings go in as (pointer, length) in the module's memory, NUL not needed.
         * An accessor taking (buffer, capacity) copies at most `capacity` bytes and
         * returns the value's whole length, or -1 when the request has no such value.
         * Statuses are xcallback.h's: 0 OK, -1 invalid argument, -2 bad pattern,
         * -3 route conflict, -4 not registering, -5 already completed.
         * A handler replies before it returns. */
        #ifndef XCALLBACK_WASM_H
        #define XCALLBACK_WASM_H

        #include <stdint.h>

        #define XCALLBACK_WASM_ABI_MAJOR \(WasmABI.major)
        #define XCALLBACK_WASM_ABI_MINOR \(WasmABI.minor)

        #define XCALLBACK_WASM_IMPORT(name) __attribute__((import_module("\(WasmABI.importModule)"), import_name(#name)))
        #define XCALLBACK_WASM_EXPORT(name) __attribute__((export_name(#name)))

        /* Registration, inside xcallback_register only. plugin_info comes first. */
        XCALLBACK_WASM_IMPORT(plugin_info) int32_t xcallback_plugin_info(
            const char *name, int32_t name_len, const char *version, int32_t version_len,
            const char *summary, int32_t summary_len);
        XCALLBACK_WASM_IMPORT(register_action) int32_t xcallback_register_action(
            const char *scheme, int32_t scheme_len, const char *action, int32_t action_len, int32_t handler);
        XCALLBACK_WASM_IMPORT(register_pattern) int32_t xcallback_register_pattern(
            const char *pattern, int32_t pattern_len, int32_t handler);

        /* The request in progress, inside xcallback_handle. */
        XCALLBACK_WASM_IMPORT(request_url) int32_t xcallback_request_url(char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_scheme) int32_t xcallback_request_scheme(char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_source) int32_t xcallback_request_source(char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_route) int32_t xcallback_request_route(char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_parameter) int32_t xcallback_request_parameter(
            const char *name, int32_t name_len, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_argument) int32_t xcallback_request_argument(
            const char *name, int32_t name_len, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_parameter_count) int32_t xcallback_request_parameter_count(void);
        XCALLBACK_WASM_IMPORT(request_parameter_name) int32_t xcallback_request_parameter_name(
            int32_t index, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_parameter_value) int32_t xcallback_request_parameter_value(
            int32_t index, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_argument_count) int32_t xcallback_request_argument_count(void);
        XCALLBACK_WASM_IMPORT(request_argument_name) int32_t xcallback_request_argument_name(
            int32_t index, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_argument_value) int32_t xcallback_request_argument_value(
            int32_t index, char *buffer, int32_t capacity);
        XCALLBACK_WASM_IMPORT(request_id) uint64_t xcallback_request_id(void);
        XCALLBACK_WASM_IMPORT(request_attempt) uint32_t xcallback_request_attempt(void);

        /* The reply: parameters first, then exactly one of the four. */
        XCALLBACK_WASM_IMPORT(reply_parameter) int32_t xcallback_reply_parameter(
            const char *name, int32_t name_len, const char *value, int32_t value_len);
        XCALLBACK_WASM_IMPORT(reply_success) int32_t xcallback_reply_success(void);
        XCALLBACK_WASM_IMPORT(reply_error) int32_t xcallback_reply_error(
            const char *code, int32_t code_len, const char *message, int32_t message_len,
            const char *domain, int32_t domain_len);
        XCALLBACK_WASM_IMPORT(reply_cancel) int32_t xcallback_reply_cancel(void);
        XCALLBACK_WASM_IMPORT(reply_decline) int32_t xcallback_reply_decline(void);

        /* One line in the host's log: 0 debug, 1 info, 2 warning, 3 error. */
        XCALLBACK_WASM_IMPORT(log) void xcallback_log(int32_t level, const char *message, int32_t message_len);

        /* The version export; write it once, beside your xcallback_register
         * (`int32_t xcallback_register(void)`, exported as such) and xcallback_handle
         * (`void xcallback_handle(int32_t handler)`). */
        #define XCALLBACK_WASM_PLUGIN() \\
            XCALLBACK_WASM_EXPORT(\(WasmABI.versionExport)) int32_t xcallback_abi_version(void) { \\
                return (XCALLBACK_WASM_ABI_MAJOR << 16) | XCALLBACK_WASM_ABI_MINOR; \\
            }

        #endif

        """
}
#endif
