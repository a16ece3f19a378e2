import Testing
import XCallbackURL

@Suite struct PropertyTests {
    @Test func encodeThenDecodeRoundTripsUnicode() throws {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        for _ in 0..<5_000 {
            let text = Generate.unicodeString(&rng)
            let encoded = PercentEncoding.encode(text)
            #expect(encoded.utf8.allSatisfy { $0.isUnreservedOrEscape }, "\(encoded)")
            #expect(try PercentEncoding.decode(encoded) == text)
        }
    }

    @Test func encodeThenDecodeRoundTripsByteDerivedStrings() throws {
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<5_000 {
            let text = Generate.byteDerivedString(&rng)
            #expect(try PercentEncoding.decode(PercentEncoding.encode(text)) == text)
        }
    }

    @Test func decodingArbitraryBytesNeverTraps() {
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<5_000 {
            let bytes = Generate.urlishBytes(&rng, maxLength: 40)
            bytes.withUnsafeBufferPointer { buffer in
                do throws(URLParseError) {
                    let text = try PercentEncoding.decode(buffer)
                    #expect(!text.utf8.contains(0x25) || bytes.contains(0x25))
                } catch {
                    #expect(error.offset >= 0 && error.offset <= bytes.count)
                }
            }
        }
    }

    @Test func parsingArbitraryBytesNeverTraps() {
        var rng = SeededGenerator(seed: 2024)
        var parsed = 0
        var failures: [URLParseError.Kind: Int] = [:]
        for iteration in 0..<30_000 {
            var bytes = iteration % 3 == 0
                ? (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : Generate.urlishBytes(&rng)
            if iteration % 2 == 1 { bytes = Array("app://".utf8) + bytes }
            let limits = ParseLimits(maxLineBytes: iteration % 5 == 0 ? 40 : 65_536)
            bytes.withUnsafeBufferPointer { buffer in
                do throws(URLParseError) {
                    let url = try RequestURL(parsing: buffer, limits: limits)
                    parsed += 1
                    #expect(!url.scheme.isEmpty)
                    #expect(url.scheme == url.scheme.lowercased())
                    #expect(!url.pathSegments.contains(""))
                    #expect(!url.parameters.contains { ["x-source", "x-success", "x-error", "x-cancel"].contains($0.name) })
                } catch {
                    failures[error.kind, default: 0] += 1
                    #expect(error.offset >= 0 && error.offset <= max(bytes.count, limits.maxLineBytes))
                    #expect(!error.message.isEmpty)
                }
            }
        }
        // The generator must reach both outcomes and every kind of failure, or it tests little.
        #expect(parsed > 1_000)
        for kind: URLParseError.Kind in [.empty, .tooLong, .nulByte, .invalidUTF8, .missingScheme, .invalidSchemeCharacter, .malformedPercentEscape] {
            #expect(failures[kind, default: 0] > 0, "never produced \(kind)")
        }
    }

    @Test func rebuiltComponentsParseToTheSameComponents() throws {
        var rng = SeededGenerator(seed: 99)
        for _ in 0..<3_000 {
            let url = randomRequest(&rng)
            let line = url.urlString
            let reparsed = try RequestURL(parsing: line)
            #expect(reparsed == url, "\(line)")
        }
    }

    @Test func parsedURLsRebuildToTheSameComponents() throws {
        var rng = SeededGenerator(seed: 5)
        var checked = 0
        for _ in 0..<20_000 {
            let bytes = Array("app:".utf8) + Generate.urlishBytes(&rng, wellFormed: true)
            guard let url = try? bytes.withUnsafeBufferPointer({ buffer throws(URLParseError) in
                try RequestURL(parsing: buffer)
            }) else { continue }
            checked += 1
            #expect(try RequestURL(parsing: url.urlString) == url, "\(url.urlString)")
        }
        #expect(checked > 15_000)
    }

    @Test func valuesNeverInjectParameters() throws {
        var rng = SeededGenerator(seed: 1337)
        let hostile = ["&x-success=evil://", "&x-error=evil://&", "x=1&x-source=me", "#&x-cancel=evil://", "?&=", "%26x-success%3D"]
        for _ in 0..<2_000 {
            let value = Generate.unicodeString(&rng, maxLength: 6, allowNUL: false)
                + hostile.randomElement(using: &rng)! + Generate.unicodeString(&rng, maxLength: 6, allowNUL: false)
            let name = Bool.random(using: &rng) ? "result" : "x-success" + hostile.randomElement(using: &rng)!
            let outcome = Outcome.success([QueryParameter(name, value)])

            let line = outcome.line(callback: "app://ok?keep=1")
            let parsed = try RequestURL(parsing: line)
            #expect(Array(parsed.parameters) == [QueryParameter("keep", "1"), QueryParameter(name, value)], "\(line)")
            #expect(parsed.successURL == nil && parsed.errorURL == nil && parsed.cancelURL == nil && parsed.source == nil)
            #expect(parsed.fragment == nil)

            let bare = try RequestURL(parsing: "app:" + outcome.line(callback: nil))
            #expect(Array(bare.parameters) == [QueryParameter(name, value)])
            #expect(bare.successURL == nil)

            let request = RequestURL(scheme: "calc", host: "x-callback-url", pathSegments: ["add"],
                                     parameters: [QueryParameter("text", value)], successURL: "app://ok")
            let reparsed = try RequestURL(parsing: request.urlString)
            #expect(reparsed.parameters.all("text") == [value])
            #expect(reparsed.successURL == "app://ok")
        }
    }

    private func randomRequest(_ rng: inout SeededGenerator) -> RequestURL {
        let callbackNames: Set = ["x-source", "x-success", "x-error", "x-cancel"]
        func text(_ rng: inout SeededGenerator, nonEmpty: Bool = false) -> String {
            while true {
                let candidate = Generate.unicodeString(&rng, maxLength: 12, allowNUL: false)
                if !nonEmpty || !candidate.isEmpty { return candidate }
            }
        }
        let hostChoice = Int.random(in: 0..<4, using: &rng)
        var host = hostChoice == 0 ? "" : hostChoice == 1 ? "x-callback-url" : text(&rng, nonEmpty: true)
        if host.lowercased() == "x-callback-url" { host = "x-callback-url" }
        var parameters: [QueryParameter] = []
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            var name = text(&rng)
            if callbackNames.contains(name) { name += "_" }
            parameters.append(QueryParameter(name, text(&rng)))
        }
        func maybe(_ rng: inout SeededGenerator) -> String? { Bool.random(using: &rng) ? text(&rng) : nil }
        return RequestURL(
            scheme: Generate.scheme(&rng).lowercased(),
            host: host,
            pathSegments: (0..<Int.random(in: 0...4, using: &rng)).map { _ in text(&rng, nonEmpty: true) },
            parameters: QueryParameters(parameters),
            source: maybe(&rng), successURL: maybe(&rng), errorURL: maybe(&rng), cancelURL: maybe(&rng),
            fragment: maybe(&rng))
    }
}

extension UInt8 {
    fileprivate var isUnreservedOrEscape: Bool {
        switch self {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E, 0x25: return true
        default: return false
        }
    }
}
