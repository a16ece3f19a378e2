import XCallbackURL

/// Properties of `RequestURL(parsing:)` on arbitrary bytes (the `url-parser` fuzz target):
///
/// 1. It agrees with `ReferenceURLParser`, a naive re-reading of the same grammar, on
///    every input: the same components byte for byte, or the same error kind and offset.
/// 2. The `String` entry point gives the same answer as the byte entry point.
/// 3. A line at the length limit parses as before; one byte more is `tooLong`.
/// 4. Errors name their position ("at byte N") where they have one.
/// 5. A parsed URL rebuilt with `urlString` parses to the same components, and
///    rebuilding that gives the same text (a fixed point).
/// 6. The fast lane's `RequestLine` accepts only lines `RequestURL` parses (once
///    each value it decodes has decoded), with the same components.
enum URLParserProperties {
    static func check(_ input: UnsafeBufferPointer<UInt8>) throws(PropertyViolation) {
        let bytes = Array(input)
        let parsed = Result { () throws(URLParseError) -> RequestURL in try RequestURL(parsing: input) }
        let expected = ReferenceURLParser.parse(bytes)
        try checkFastLane(input, parsed)

        switch (parsed, expected) {
        case (.success(let url), .success(let reference)):
            try requireSame(url, reference, "parser agrees with the reference parser")
        case (.failure(let error), .failure(let reference)):
            try require(error.kind == reference.kind && error.offset == reference.offset,
                        "parser fails where and as the reference parser does",
                        "got \(error.kind) at \(error.offset) (\(error.message)), expected \(reference.kind) at \(reference.offset)")
            try checkMessage(of: error, inputLength: bytes.count)
        case (.success(let url), .failure(let reference)):
            throw PropertyViolation(property: "parser fails where and as the reference parser does",
                                    detail: "parsed to \(url.urlString.debugDescription), expected \(reference.kind) at \(reference.offset)")
        case (.failure(let error), .success):
            throw PropertyViolation(property: "parser fails where and as the reference parser does",
                                    detail: "failed with \(error.kind) at \(error.offset) (\(error.message)), the reference parses it")
        }

        if let line = String(validating: bytes, as: UTF8.self) {
            let fromString = Result { () throws(URLParseError) -> RequestURL in try RequestURL(parsing: line) }
            try requireSameResult(fromString, parsed, "the String and byte entry points agree")
        }

        if !bytes.isEmpty {
            let atLimit = Result { () throws(URLParseError) -> RequestURL in
                try RequestURL(parsing: input, limits: ParseLimits(maxLineBytes: bytes.count))
            }
            try requireSameResult(atLimit, parsed, "a line exactly at the length limit parses as without a limit")
            let overLimit = Result { () throws(URLParseError) -> RequestURL in
                try RequestURL(parsing: input, limits: ParseLimits(maxLineBytes: bytes.count - 1))
            }
            guard case .failure(let error) = overLimit, error.kind == .tooLong, error.offset == bytes.count - 1 else {
                throw PropertyViolation(property: "a line one byte over the length limit is tooLong", detail: "\(overLimit)")
            }
        }

        guard case .success(let url) = parsed else { return }
        let rebuilt = url.urlString
        let reparsed: RequestURL
        do {
            reparsed = try RequestURL(parsing: rebuilt)
        } catch {
            throw PropertyViolation(property: "a rebuilt URL parses",
                                    detail: "\(rebuilt.debugDescription) fails: \(error.message)")
        }
        try requireSame(reparsed, ReferenceURLParser.Components(url), "a rebuilt URL parses to the same components")
        try require(sameBytes(reparsed.urlString, rebuilt), "rebuilding is a fixed point",
                    "\(rebuilt.debugDescription) rebuilds to \(reparsed.urlString.debugDescription)")
    }

    /// Property 6: what the fast lane reads from a line is what `RequestURL` reads.
    private static func checkFastLane(_ input: UnsafeBufferPointer<UInt8>, _ parsed: Result<RequestURL, URLParseError>)
        throws(PropertyViolation)
    {
        var line = RequestLine()
        guard line.parse(input) else { return }
        var scratch = [UInt8](repeating: 0, count: input.count + 8)
        func decoded(_ span: RequestLine.Span) -> String? {
            scratch.withUnsafeMutableBufferPointer { target in
                RequestLine.decodeValue(span, in: input, into: target.baseAddress!).map {
                    String(decoding: UnsafeBufferPointer(rebasing: target[..<$0]), as: UTF8.self)
                }
            }
        }
        func raw(_ span: RequestLine.Span) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: input[span.start..<span.end]), as: UTF8.self)
        }
        let values = line.parameters.map { decoded($0.value) }
        let callbacks = [line.source, line.success, line.error, line.cancel].map { $0.map(decoded) }
        // The lane gives up on a value that does not decode, and leaves the line to RequestURL.
        guard values.allSatisfy({ $0 != nil }), callbacks.allSatisfy({ $0 == nil || $0! != nil }) else { return }
        guard case .success(let url) = parsed else {
            throw PropertyViolation(property: "the fast lane accepts only lines RequestURL parses", detail: "\(parsed)")
        }
        let property = "the fast lane reads what RequestURL reads"
        try require(sameBytes(raw(line.scheme).lowercased(), url.scheme), property, "scheme")
        try require(sameBytes(raw(line.host).lowercased(), url.host.lowercased()), property, "host")
        try require(line.path.map(raw).elementsEqual(url.pathSegments, by: sameBytes), property, "path")
        try require(line.parameters.map { raw($0.name) }.elementsEqual(url.parameters.map(\.name), by: sameBytes), property, "names")
        try require(values.map { $0! }.elementsEqual(url.parameters.map(\.value), by: sameBytes), property, "values")
        let expected = [url.source, url.successURL, url.errorURL, url.cancelURL]
        for (mine, theirs) in zip(callbacks, expected) {
            try require(mine.map { $0! } == theirs, property, "x-callback parameters: \(String(describing: mine)) versus \(String(describing: theirs))")
        }
    }

    /// Messages say where the problem is, in the same terms as `offset`.
    private static func checkMessage(of error: URLParseError, inputLength: Int) throws(PropertyViolation) {
        try require(!error.message.isEmpty, "an error has a message")
        try require(error.offset >= 0 && error.offset <= inputLength, "an error offset lies inside the line",
                    "offset \(error.offset) in \(inputLength) bytes")
        switch error.kind {
        case .nulByte, .invalidUTF8, .invalidSchemeCharacter, .malformedPercentEscape:
            try require(error.message.hasSuffix("at byte \(error.offset)")
                        || error.message.contains("at byte \(error.offset):")
                        || error.message.contains("at byte \(error.offset) "),
                        "an error message names its byte offset", error.message.debugDescription)
        case .empty, .tooLong, .missingScheme:
            break
        }
    }

    private static func requireSame(
        _ url: RequestURL, _ expected: ReferenceURLParser.Components, _ property: String
    ) throws(PropertyViolation) {
        let actual = ReferenceURLParser.Components(url)
        if let difference = actual.firstDifference(from: expected) {
            throw PropertyViolation(property: property, detail: difference)
        }
    }

    private static func requireSameResult(
        _ a: Result<RequestURL, URLParseError>, _ b: Result<RequestURL, URLParseError>, _ property: String
    ) throws(PropertyViolation) {
        switch (a, b) {
        case (.success(let x), .success(let y)):
            try requireSame(x, ReferenceURLParser.Components(y), property)
        case (.failure(let x), .failure(let y)):
            try require(x.kind == y.kind && x.offset == y.offset, property,
                        "\(x.kind) at \(x.offset) versus \(y.kind) at \(y.offset)")
        default:
            throw PropertyViolation(property: property, detail: "one parses, the other fails")
        }
    }
}

/// The request-line grammar of SPEC section 1 and `RequestURL`, read the slow and
/// obvious way: find the delimiters, slice, decode each piece.
enum ReferenceURLParser {
    /// The parts of a request line, as bytes, for byte-exact comparison.
    struct Components: Equatable {
        var scheme: [UInt8] = []
        var host: [UInt8] = []
        var pathSegments: [[UInt8]] = []
        var parameters: [[UInt8]] = []   // name, value, name, value, …
        var source: [UInt8]?
        var success: [UInt8]?
        var error: [UInt8]?
        var cancel: [UInt8]?
        var fragment: [UInt8]?

        init() {}

        init(_ url: RequestURL) {
            scheme = Array(url.scheme.utf8)
            host = Array(url.host.utf8)
            pathSegments = url.pathSegments.map { Array($0.utf8) }
            parameters = url.parameters.flatMap { [Array($0.name.utf8), Array($0.value.utf8)] }
            source = url.source.map { Array($0.utf8) }
            success = url.successURL.map { Array($0.utf8) }
            error = url.errorURL.map { Array($0.utf8) }
            cancel = url.cancelURL.map { Array($0.utf8) }
            fragment = url.fragment.map { Array($0.utf8) }
        }

        /// What differs, in words, or nil when nothing does.
        func firstDifference(from expected: Components) -> String? {
            func show(_ bytes: [UInt8]?) -> String { shown(bytes.map { text($0) }) }
            func show(_ list: [[UInt8]]) -> String { "[" + list.map { show($0) }.joined(separator: ", ") + "]" }
            if scheme != expected.scheme { return "scheme \(show(scheme)), expected \(show(expected.scheme))" }
            if host != expected.host { return "host \(show(host)), expected \(show(expected.host))" }
            if pathSegments != expected.pathSegments {
                return "path \(show(pathSegments)), expected \(show(expected.pathSegments))"
            }
            if parameters != expected.parameters {
                return "parameters \(show(parameters)), expected \(show(expected.parameters))"
            }
            if source != expected.source { return "x-source \(show(source)), expected \(show(expected.source))" }
            if success != expected.success { return "x-success \(show(success)), expected \(show(expected.success))" }
            if error != expected.error { return "x-error \(show(error)), expected \(show(expected.error))" }
            if cancel != expected.cancel { return "x-cancel \(show(cancel)), expected \(show(expected.cancel))" }
            if fragment != expected.fragment { return "fragment \(show(fragment)), expected \(show(expected.fragment))" }
            return nil
        }
    }

    struct Failure: Error {
        var kind: URLParseError.Kind
        var offset: Int
    }

    static func parse(_ bytes: [UInt8]) -> Result<Components, Failure> {
        if bytes.isEmpty { return .failure(Failure(kind: .empty, offset: 0)) }
        // NUL and invalid UTF-8, whichever comes first.
        let firstNUL = bytes.firstIndex(of: 0)
        let firstInvalid = ReferenceDecoding.firstInvalidUTF8(bytes)
        switch (firstNUL, firstInvalid) {
        case let (nul?, invalid?):
            return .failure(nul < invalid ? Failure(kind: .nulByte, offset: nul) : Failure(kind: .invalidUTF8, offset: invalid))
        case let (nul?, nil): return .failure(Failure(kind: .nulByte, offset: nul))
        case let (nil, invalid?): return .failure(Failure(kind: .invalidUTF8, offset: invalid))
        case (nil, nil): break
        }

        let colon = UInt8(ascii: ":"), slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), hash = UInt8(ascii: "#")
        guard let schemeEnd = bytes.firstIndex(where: { [colon, slash, question, hash].contains($0) }),
              bytes[schemeEnd] == colon, schemeEnd > 0
        else { return .failure(Failure(kind: .missingScheme, offset: 0)) }
        if !isLetter(bytes[0]) { return .failure(Failure(kind: .invalidSchemeCharacter, offset: 0)) }
        for index in 1..<schemeEnd where !(isLetter(bytes[index]) || isDigit(bytes[index]) || "+-.".utf8.contains(bytes[index])) {
            return .failure(Failure(kind: .invalidSchemeCharacter, offset: index))
        }

        var components = Components()
        components.scheme = bytes[0..<schemeEnd].map(asciiLowercased)
        let rest = schemeEnd + 1
        let fragmentStart = bytes[rest...].firstIndex(of: hash) ?? bytes.count
        if fragmentStart < bytes.count { components.fragment = Array(bytes[(fragmentStart + 1)...]) }
        let queryStart = bytes[rest..<fragmentStart].firstIndex(of: question) ?? fragmentStart

        func decode(_ range: Range<Int>) -> Result<[UInt8], Failure> {
            ReferenceDecoding.percentDecode(bytes, range, rejectingNUL: true).mapError { failure in
                switch failure {
                case .malformedEscape(let at): return Failure(kind: .malformedPercentEscape, offset: at)
                case .encodedNUL(let at): return Failure(kind: .nulByte, offset: at)
                case .invalidUTF8(let at), .invalidDecodedUTF8(let at): return Failure(kind: .invalidUTF8, offset: at)
                }
            }
        }

        var pathStart = rest
        if queryStart - rest >= 2 && bytes[rest] == slash && bytes[rest + 1] == slash {
            let hostStart = rest + 2
            let hostEnd = bytes[hostStart..<queryStart].firstIndex(of: slash) ?? queryStart
            switch decode(hostStart..<hostEnd) {
            case .failure(let failure): return .failure(failure)
            // Any spelling of x-callback-url, escaped or not, is the one host.
            case .success(let host): components.host = isXCallbackURL(host) ? Array("x-callback-url".utf8) : host
            }
            pathStart = hostEnd
        }

        var segmentStart = pathStart
        for index in pathStart...queryStart where index == queryStart || bytes[index] == slash {
            if index > segmentStart {
                switch decode(segmentStart..<index) {
                case .failure(let failure): return .failure(failure)
                case .success(let segment): components.pathSegments.append(segment)
                }
            }
            segmentStart = index + 1
        }

        if queryStart < fragmentStart {
            var pieceStart = queryStart + 1
            for index in pieceStart...fragmentStart where index == fragmentStart || bytes[index] == UInt8(ascii: "&") {
                defer { pieceStart = index + 1 }
                guard index > pieceStart else { continue }
                let nameEnd = bytes[pieceStart..<index].firstIndex(of: UInt8(ascii: "=")) ?? index
                let valueStart = nameEnd < index ? nameEnd + 1 : index
                let name: [UInt8], value: [UInt8]
                switch decode(pieceStart..<nameEnd) {
                case .failure(let failure): return .failure(failure)
                case .success(let decoded): name = decoded
                }
                switch decode(valueStart..<index) {
                case .failure(let failure): return .failure(failure)
                case .success(let decoded): value = decoded
                }
                // Names compare byte for byte; the first occurrence of a callback parameter wins.
                switch name {
                case Array("x-source".utf8): if components.source == nil { components.source = value }
                case Array("x-success".utf8): if components.success == nil { components.success = value }
                case Array("x-error".utf8): if components.error == nil { components.error = value }
                case Array("x-cancel".utf8): if components.cancel == nil { components.cancel = value }
                default: components.parameters += [name, value]
                }
            }
        }
        return .success(components)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    private static func isXCallbackURL(_ bytes: [UInt8]) -> Bool {
        bytes.map(asciiLowercased) == Array("x-callback-url".utf8)
    }
}
