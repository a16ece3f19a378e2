import Foundation
import Testing
@testable import XCallbackBridge
import XCallbackURL

@testable import XCallbackHost

/// Every supported type at its limits, through a manifest binding a C
/// library built for the test: values in range round-trip, values one past
/// the range are `ParameterError`s (never wrapped), and small integer
/// returns are narrowed from libffi's `ffi_arg`.
@Suite("Argument conversion at the limits", .ownThreads)
struct ArgumentLimitTests {
    private func result(_ query: String, named name: String = "result") throws -> String? {
        try TestLibrary.loaded().result("ffi://x-callback-url/" + query, named: name)
    }

    private func parameterError(_ query: String) throws -> String {
        let error = try TestLibrary.loaded().error("ffi://x-callback-url/" + query)
        #expect(error.code == "ParameterError")
        #expect(error.domain == "xcallback")
        return error.message
    }

    /// (action, value that must come back unchanged)
    @Test(arguments: [
        ("id8", "-128"), ("id8", "127"), ("id8", "0"), ("idu8", "255"), ("idu8", "0"),
        ("id16", "-32768"), ("id16", "32767"), ("idu16", "65535"),
        ("add32?b=0&a", "-2147483648"), ("add32?b=0&a", "2147483647"), ("idu32", "4294967295"),
        ("id64", "-9223372036854775808"), ("id64", "9223372036854775807"),
        ("idu64", "18446744073709551615"), ("idu64", "0"),
        ("idc", "-128"), ("idc", "127"), ("idsc", "-128"), ("iduc", "255"),
        ("ids", "-32768"), ("idus", "65535"), ("idi", "-2147483648"), ("idui", "4294967295"),
        ("idl", "-9223372036854775808"), ("idul", "18446744073709551615"),
        ("idll", "-9223372036854775808"), ("idull", "18446744073709551615"), ("idz", "18446744073709551615"),
    ])
    func integersInRangeRoundTrip(action: String, value: String) throws {
        let query = action.contains("?") ? "\(action)=\(value)" : "\(action)?\(Self.parameter(of: action))=\(value)"
        #expect(try result(query) == value)
    }

    /// (action, value one past the declared width, C type named in the message)
    @Test(arguments: [
        ("id8", "128", "int8_t"), ("id8", "-129", "int8_t"), ("idu8", "256", "uint8_t"), ("idu8", "-1", "uint8_t"),
        ("id16", "32768", "int16_t"), ("idu16", "65536", "uint16_t"),
        ("idu32", "4294967296", "uint32_t"), ("idu32", "-1", "uint32_t"),
        ("id64", "9223372036854775808", "int64_t"), ("id64", "-9223372036854775809", "int64_t"),
        ("idu64", "18446744073709551616", "uint64_t"), ("idu64", "-1", "uint64_t"),
        ("iduc", "256", "unsigned char"), ("ids", "-32769", "short"), ("idi", "2147483648", "int"),
        ("idui", "4294967296", "unsigned int"), ("idl", "9223372036854775808", "long"),
        ("idz", "18446744073709551616", "size_t"), ("idz", "-1", "size_t"),
    ])
    func integersOutOfRangeAreErrors(action: String, value: String, type: String) throws {
        let message = try parameterError("\(action)?\(Self.parameter(of: action))=\(value)")
        #expect(message.contains("'\(Self.parameter(of: action))' is out of range for \(type)"), "\(message)")
        #expect(message.hasSuffix("got '\(value)'"), "\(message)")
    }

    @Test func int8OutOfRangeMessageInFull() throws {
        #expect(try parameterError("id8?x=128")
            == "parameter 'x' is out of range for int8_t (an integer from -128 to 127), got '128'")
    }

    /// (text that is not a decimal integer at all)
    @Test(arguments: ["abc", "", " 1", "1 ", "1.0", "1e3", "0x10", "--1", "+", "١٢"])
    func nonIntegersAreInvalid(text: String) throws {
        let ascii = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let encoded = text.addingPercentEncoding(withAllowedCharacters: ascii) ?? text
        let message = try parameterError("id8?x=\(encoded)")
        #expect(message == "parameter 'x' must be an int8_t (an integer from -128 to 127), got '\(text)'")
    }

    @Test func plusSignIsAccepted() throws {
        #expect(try result("id8?x=%2B127") == "127")
    }

    @Test func smallIntegerReturnsAreNarrowed() throws {
        // libffi widens an int8_t/uint8_t return to ffi_arg; the host narrows it back.
        #expect(try result("neg8?x=5") == "-5")
        #expect(try result("neg8?x=-127") == "127")
        #expect(try result("neg8?x=-128") == "-128")   // -(-128) wraps to -128 in C's conversion, not in the host
        #expect(try result("idu8?x=200") == "200")
        #expect(try result("id16?x=-2") == "-2")
        #expect(try result("add32?a=-5&b=2") == "-3")
    }

    @Test func uint64MaxAndInt64Min() throws {
        #expect(try result("inc64?x=18446744073709551614") == "18446744073709551615")
        #expect(try result("id64?x=-9223372036854775808") == "-9223372036854775808")
    }

    @Test func floats() throws {
        #expect(try result("half?x=3") == "1.5")
        #expect(try result("half?x=0.2") == "0.1")          // float's own shortest form, not 0.10000000149011612
        #expect(try result("half?x=-1e30") == "-5e+29")
        #expect(try parameterError("half?x=1e39").contains("'x' is out of range for float"))
        #expect(try parameterError("half?x=nan") == "parameter 'x' must be a float (a decimal number), got 'nan'")
        #expect(try result("mul?a=2&b=3.1") == "6.2")
        #expect(try result("mul?a=1e308&b=10") == "inf")    // the function's overflow, reported as is
        #expect(try parameterError("mul?a=1e309&b=1") == "parameter 'a' must be a double (a decimal number), got '1e309'")
    }

    @Test(arguments: [("true", "false"), ("false", "true"), ("1", "false"), ("0", "true"),
                      ("yes", "false"), ("no", "true"), ("TRUE", "false"), ("No", "true")])
    func bools(value: String, negated: String) throws {
        #expect(try result("not?b=\(value)") == negated)
    }

    @Test func boolRejectsOtherWords() throws {
        #expect(try parameterError("not?b=maybe")
            == "parameter 'b' must be a bool (true/false, 1/0 or yes/no), got 'maybe'")
    }

    @Test func cStrings() throws {
        #expect(try result("length?s=hello", named: "bytes") == "5")
        #expect(try result("length?s=", named: "bytes") == "0")
        #expect(try result("length?s=h%C3%A9", named: "bytes") == "3")    // bytes, not characters
        #expect(try result("echo?s=a%20b%26c") == "a b&c")
        // The URL parser refuses %00 today; a value holding NUL must still never be cut short.
        let driver = try TestLibrary.loaded()
        let (handler, _) = try #require(try driver.route("ffi://x-callback-url/length?s=x"))
        let fields = RequestFields(url: "ffi://x-callback-url/length", scheme: "ffi", source: nil,
                                   parameters: [QueryParameter("s", "a\u{0}b")], arguments: [])
        let outcome = try driver.invoke(handler, fields)
        #expect(outcome.value("errorCode") == "ParameterError")
        #expect(outcome.value("errorMessage")
            == "parameter 's' must be a const char * (text without NUL bytes): a C string cannot hold a NUL byte (%00)")
    }

    @Test func cStringReturns() throws {
        #expect(try result("greeting") == "hello, world")
        let nothing = try #require(try TestLibrary.loaded().outcome("ffi://x-callback-url/nothing"))
        #expect(nothing == .success())    // NULL: success without a result
    }

    @Test func voidFunctionsSucceedWithNoParameters() throws {
        let driver = try TestLibrary.loaded()
        let before = try #require(Int(try result("touched") ?? ""))
        #expect(try driver.outcome("ffi://x-callback-url/touch") == .success())
        #expect(try result("touched") == String(before + 1))
    }

    @Test func tenMixedArgumentsArriveInOrder() throws {
        // a + b + c + d + e + f + 1000 + h + strlen(s) + i
        let sum = try result("mixed?a=-1&b=65535&c=-100000&d=5000000000&e=0.5&f=0.25&g=yes&h=255&s=four&i=7",
                             named: "sum")
        #expect(sum == DecimalText.format(-1 + 65535 - 100000 + 5_000_000_000 + 0.5 + 0.25 + 1000 + 255 + 4 + 7))
    }

    @Test func missingParametersNameTheParameterAndItsType() throws {
        #expect(try parameterError("add32?a=1") == "missing required parameter 'b': an int32_t (an integer from -2147483648 to 2147483647)")
        #expect(try parameterError("length") == "missing required parameter 's': a const char * (text without NUL bytes)")
        #expect(try parameterError("mixed?a=1").hasPrefix("missing required parameter 'b': a uint16_t"))
    }

    @Test func firstOfRepeatedValuesAndExtraParametersIgnored() throws {
        #expect(try result("add32?a=1&a=100&b=2&unused=zzz") == "3")
    }

    @Test func callbacksAreNotParameters() throws {
        let driver = try TestLibrary.loaded()
        let outcome = try driver.outcome("ffi://x-callback-url/add32?a=1&b=2&x-success=app://ok&x-source=test")
        #expect(outcome == .success([QueryParameter(name: "result", value: "3")]))
    }

    @Test func concurrentCallsShareOneCallInterface() async throws {
        let driver = try TestLibrary.loaded()
        let (handler, _) = try #require(try driver.route("ffi://x-callback-url/add32?a=0&b=0"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        let fields = RequestFields(url: "ffi://x-callback-url/add32", scheme: "ffi", source: nil,
                                                   parameters: [QueryParameter("a", "\(task)"), QueryParameter("b", "\(index)")],
                                                   arguments: [])
                        let outcome = try driver.invoke(handler, fields)
                        #expect(outcome.value("result") == "\(task + index)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// The parameter name each identity function of the test library takes.
    private static func parameter(of action: String) -> String {
        switch action {
        case "idc", "idsc", "iduc": return "c"
        case "add32?b=0&a": return "a"
        default: return "x"
        }
    }
}
