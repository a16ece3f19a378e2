import Testing
@testable import XCallbackURL

@Suite struct PercentEncodingTests {
    @Test func encodesEverythingButUnreservedBytes() {
        #expect(PercentEncoding.encode("AZaz09-._~") == "AZaz09-._~")
        #expect(PercentEncoding.encode("a b") == "a%20b")
        #expect(PercentEncoding.encode("&=+?#/%:@!$'()*,;[]") == "%26%3D%2B%3F%23%2F%25%3A%40%21%24%27%28%29%2A%2C%3B%5B%5D")
        #expect(PercentEncoding.encode("é") == "%C3%A9")
        #expect(PercentEncoding.encode("🦊") == "%F0%9F%A6%8A")
        #expect(PercentEncoding.encode("\u{0}\n\u{7F}") == "%00%0A%7F")
        #expect(PercentEncoding.encode("") == "")
    }

    @Test func everyByteIsEncodedUnlessUnreserved() {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        for byte in 0...255 as ClosedRange<UInt8> {
            var output: [UInt8] = []
            [byte].withUnsafeBufferPointer { PercentEncoding.encode($0, into: &output) }
            let expected = unreserved.contains(byte)
                ? [byte]
                : Array("%".utf8) + Array(String(byte, radix: 16, uppercase: true).utf8).paddedToTwo
            #expect(output == expected, "byte \(byte)")
        }
    }

    @Test func longTextTakesTheHeapPath() throws {
        let text = String(repeating: "a b&c=é/", count: 2_000)
        let encoded = PercentEncoding.encode(text)
        #expect(try PercentEncoding.decode(encoded) == text)
        let outcome = Outcome.success([QueryParameter("result", text)])
        let parsed = try RequestURL(parsing: outcome.line(callback: "app://ok?x=1#f"))
        #expect(parsed.parameters.first("result") == text)
        #expect(parsed.fragment == "f")
    }

    @Test("a URL copied into a record escapes exactly its controls and DEL, wherever they are in a word")
    func lineSafeCopyEscapesControlsAnywhere() {
        func expected(_ bytes: [UInt8]) -> [UInt8] {
            bytes.flatMap { byte -> [UInt8] in
                byte < 0x20 || byte == 0x7F
                    ? Array("%".utf8) + Array(String(byte, radix: 16, uppercase: true).utf8).paddedToTwo : [byte]
            }
        }
        func copied(_ bytes: [UInt8]) -> [UInt8] {
            let room = UnsafeMutablePointer<UInt8>.allocate(capacity: 3 * bytes.count + 1)
            defer { room.deallocate() }
            let end = bytes.withUnsafeBufferPointer { PercentEncoding.writeLineSafe($0, to: room) }
            return Array(UnsafeBufferPointer(start: room, count: end - room))
        }
        let plain = Array("app://x-callback-url/ok?id=7&step=~é".utf8)
        for length in 0...plain.count {
            let line = Array(plain.prefix(length))
            #expect(copied(line) == line)
            for position in 0..<length {
                for special: UInt8 in [0x00, 0x0A, 0x0D, 0x1F, 0x7F, 0x20, 0x80, 0xFF] {
                    var changed = line
                    changed[position] = special
                    #expect(copied(changed) == expected(changed), "byte \(special) at \(position) of \(length)")
                }
            }
        }
    }

    @Test func encodesIntoBytes() {
        var output = Array("x=".utf8)
        PercentEncoding.encode("1 & 2", into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "x=1%20%26%202")
    }

    @Test func decodes() throws {
        #expect(try PercentEncoding.decode("a%20b") == "a b")
        #expect(try PercentEncoding.decode("a+b") == "a+b")
        #expect(try PercentEncoding.decode("%2b%2B") == "++")
        #expect(try PercentEncoding.decode("%C3%A9t%C3%a9") == "été")
        #expect(try PercentEncoding.decode("") == "")
        #expect(try PercentEncoding.decode("plain") == "plain")
        #expect(try PercentEncoding.decode("%00") == "\u{0}")
        let text = "xx%41yy"
        #expect(try PercentEncoding.decode(text.dropFirst(2)) == "Ayy")
    }

    @Test func rejectsMalformedEscapes() {
        for (text, offset) in [("%", 0), ("%4", 0), ("a%G1", 1), ("ab%1G", 2), ("%%", 0), ("ok%2", 2)] {
            #expect(throws: URLParseError.self) { try PercentEncoding.decode(text) }
            do {
                _ = try PercentEncoding.decode(text)
            } catch {
                #expect(error.kind == .malformedPercentEscape, "\(text)")
                #expect(error.offset == offset, "\(text)")
            }
        }
        do {
            _ = try PercentEncoding.decode("value=%G1")
        } catch {
            #expect(error.message == "invalid percent escape '%G1' at byte 6: '%' must be followed by two hex digits")
        }
    }

    @Test func substringOffsetsCountFromTheSubstring() {
        let text = "abc%zz"
        do {
            _ = try PercentEncoding.decode(text.dropFirst(1))
            Issue.record("expected an error")
        } catch {
            #expect(error.offset == 2)
        }
    }

    @Test func rejectsDecodedInvalidUTF8() {
        for text in ["%FF", "%C3", "%C3%28", "a%ED%A0%80", "%F4%90%80%80"] {
            do {
                _ = try PercentEncoding.decode(text)
                Issue.record("expected an error for \(text)")
            } catch {
                #expect(error.kind == .invalidUTF8, "\(text)")
            }
        }
    }

    @Test func decodesRawBytes() throws {
        let bytes: [UInt8] = Array("caf%C3%A9".utf8)
        let decoded = try bytes.withUnsafeBufferPointer { buffer throws(URLParseError) in
            try PercentEncoding.decode(buffer)
        }
        #expect(decoded == "café")
        let invalid: [UInt8] = [0x61, 0xFF]
        #expect(throws: URLParseError.self) {
            try invalid.withUnsafeBufferPointer { buffer throws(URLParseError) in try PercentEncoding.decode(buffer) }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate var paddedToTwo: [UInt8] { count == 1 ? [0x30] + self : self }
}
