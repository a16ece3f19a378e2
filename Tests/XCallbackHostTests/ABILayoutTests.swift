import CXCallback
import Foundation
import Testing

/// The layout of the ABI types as Swift imports them, and as a C compiler
/// lays them out from the same header.
@Suite("ABI layout", .ownThreads)
struct ABILayoutTests {
    private let pointer = MemoryLayout<UnsafeRawPointer>.size

    @Test func descriptorIsSixteenBytesThenThreePointers() {
        #expect(MemoryLayout<xcallback_descriptor>.size == 16 + 3 * pointer)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.magic) == 0)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.abi_major) == 4)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.abi_minor) == 6)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.descriptor_size) == 8)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.host_api_size) == 12)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.name) == 16)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.version) == 16 + pointer)
        #expect(MemoryLayout<xcallback_descriptor>.offset(of: \.description) == 16 + 2 * pointer)
    }

    @Test func valueTypes() {
        #expect(MemoryLayout<xcallback_reply>.size == 8)
        #expect(MemoryLayout<xcallback_param>.size == 2 * pointer)
        #expect(MemoryLayout<xcallback_host_api>.offset(of: \.api_size) == 0)
        #expect(MemoryLayout<xcallback_host_api>.offset(of: \.abi_major) == 4)
        #expect(MemoryLayout<xcallback_host_api>.offset(of: \.abi_minor) == 6)
        #expect(MemoryLayout<xcallback_host_api>.offset(of: \.register_action) == 8)
        // ABI 1.0: 3 registration + 8 accessors + 4 completions + log = 16
        // function pointers; later minors only append.
        #expect(MemoryLayout<xcallback_host_api>.offset(of: \.log) == 8 + 15 * pointer)
        #expect(MemoryLayout<xcallback_host_api>.size >= 8 + 16 * pointer)
        #expect(MemoryLayout<xcallback_host_api>.size % pointer == 0)
    }

    @Test func constants() {
        #expect(XCALLBACK_ABI_MAGIC == 0x5843_4231)
        let bytes = withUnsafeBytes(of: XCALLBACK_ABI_MAGIC.bigEndian) { Array($0) }
        #expect(bytes == Array("XCB1".utf8))
        #expect(XCALLBACK_ABI_MAJOR == 1)
        #expect(XCALLBACK_ABI_MINOR >= 0)
        #expect(XCALLBACK_DESCRIPTOR_SYMBOL == "xcallback_plugin_descriptor")
        #expect(XCALLBACK_REGISTER_SYMBOL == "xcallback_plugin_register")
        #expect(XCALLBACK_SHUTDOWN_SYMBOL == "xcallback_plugin_shutdown")
        let statuses: [Int] = [XCALLBACK_OK, XCALLBACK_ERR_INVALID_ARGUMENT, XCALLBACK_ERR_BAD_PATTERN,
                               XCALLBACK_ERR_ROUTE_CONFLICT, XCALLBACK_ERR_NOT_REGISTERING, XCALLBACK_ERR_ALREADY_COMPLETED]
        #expect(statuses == [0, -1, -2, -3, -4, -5])
        let levels: [Int] = [XCALLBACK_LOG_DEBUG, XCALLBACK_LOG_INFO, XCALLBACK_LOG_WARNING, XCALLBACK_LOG_ERROR]
        #expect(levels == [0, 1, 2, 3])
    }

    /// A C program built from the same header prints sizeof and offsetof;
    /// Swift's view of every field must agree.
    @Test func swiftAndCAgreeOnEveryOffset() throws {
        let fields: [(c: String, swift: Int?)] = [
            ("sizeof(xcallback_descriptor)", MemoryLayout<xcallback_descriptor>.size),
            ("offsetof(xcallback_descriptor, name)", MemoryLayout<xcallback_descriptor>.offset(of: \.name)),
            ("offsetof(xcallback_descriptor, version)", MemoryLayout<xcallback_descriptor>.offset(of: \.version)),
            ("offsetof(xcallback_descriptor, description)", MemoryLayout<xcallback_descriptor>.offset(of: \.description)),
            ("sizeof(xcallback_reply)", MemoryLayout<xcallback_reply>.size),
            ("sizeof(xcallback_param)", MemoryLayout<xcallback_param>.size),
            ("offsetof(xcallback_param, value)", MemoryLayout<xcallback_param>.offset(of: \.value)),
            ("sizeof(xcallback_host_api)", MemoryLayout<xcallback_host_api>.size),
            ("offsetof(xcallback_host_api, register_action)", MemoryLayout<xcallback_host_api>.offset(of: \.register_action)),
            ("offsetof(xcallback_host_api, register_controller_action)", MemoryLayout<xcallback_host_api>.offset(of: \.register_controller_action)),
            ("offsetof(xcallback_host_api, register_pattern)", MemoryLayout<xcallback_host_api>.offset(of: \.register_pattern)),
            ("offsetof(xcallback_host_api, request_url)", MemoryLayout<xcallback_host_api>.offset(of: \.request_url)),
            ("offsetof(xcallback_host_api, request_scheme)", MemoryLayout<xcallback_host_api>.offset(of: \.request_scheme)),
            ("offsetof(xcallback_host_api, request_source)", MemoryLayout<xcallback_host_api>.offset(of: \.request_source)),
            ("offsetof(xcallback_host_api, request_argument)", MemoryLayout<xcallback_host_api>.offset(of: \.request_argument)),
            ("offsetof(xcallback_host_api, request_parameter_count)", MemoryLayout<xcallback_host_api>.offset(of: \.request_parameter_count)),
            ("offsetof(xcallback_host_api, request_parameter_name)", MemoryLayout<xcallback_host_api>.offset(of: \.request_parameter_name)),
            ("offsetof(xcallback_host_api, request_parameter_value)", MemoryLayout<xcallback_host_api>.offset(of: \.request_parameter_value)),
            ("offsetof(xcallback_host_api, request_parameter)", MemoryLayout<xcallback_host_api>.offset(of: \.request_parameter)),
            ("offsetof(xcallback_host_api, reply_success)", MemoryLayout<xcallback_host_api>.offset(of: \.reply_success)),
            ("offsetof(xcallback_host_api, reply_error)", MemoryLayout<xcallback_host_api>.offset(of: \.reply_error)),
            ("offsetof(xcallback_host_api, reply_cancel)", MemoryLayout<xcallback_host_api>.offset(of: \.reply_cancel)),
            ("offsetof(xcallback_host_api, reply_decline)", MemoryLayout<xcallback_host_api>.offset(of: \.reply_decline)),
            ("offsetof(xcallback_host_api, log)", MemoryLayout<xcallback_host_api>.offset(of: \.log)),
        ]
        let prints = fields.map { "    printf(\"%zu\\n\", (size_t)\($0.c));" }.joined(separator: "\n")
        let directory = try TemporaryDirectory()
        try directory.write("layout.c", """
            #include <stddef.h>
            #include <stdio.h>
            #include "xcallback.h"

            int main(void)
            {
            \(prints)
                return 0;
            }
            """)
        try CCompiler.run(["-I", Paths.include, "layout.c", "-o", "layout"], in: directory.path)
        let run = try Subprocess.run(directory.file("layout"), [], in: directory.path)
        #expect(run.status == 0)
        let values = run.output.split(separator: "\n").map { Int($0) }
        try #require(values.count == fields.count, "\(run.output)")
        for (field, value) in zip(fields, values) {
            #expect(field.swift == value, "\(field.c): Swift \(String(describing: field.swift)), C \(String(describing: value))")
        }
    }
}
