import XCallbackURL

/// Properties of percent-coding and of callback URLs (the `callback-encoder` fuzz target).
///
/// The whole input, as a string `s` (invalid UTF-8 replaced):
/// 1. `encode(s)` holds only RFC 3986 unreserved bytes and `%XX` with uppercase hex,
///    is exactly as long as that implies, and `decode(encode(s))` is `s`, byte for byte.
///
/// The whole input, as raw bytes:
/// 2. `decode` agrees with `ReferenceDecoding` (same bytes, or the same error and offset).
///
/// The input as lines: a callback URL, then outcome parameter names and values in turn:
/// 3. The outcome line parses to the callback's own components plus exactly the appended
///    parameters, whatever the values hold (`&`, `=`, `#`, `?`, `%`, `x-success=…`):
///    no value can add, drop or change a parameter. A parameter *named* like an
///    x-callback parameter is read as one, as the parser reads any such name.
/// 4. Without a callback, `success?…` (or `error?…`, `cancel?…`) carries the same parameters.
/// 5. A NUL in a name or value (escaped `%00`) makes the line unparseable rather than cut short.
/// 6. A line is always one line: no control byte (CR, LF, any C0, DEL) in it, raw, whatever the
///    callback held; the callback's components come back as its line-safe form has them
///    (its control bytes percent-encoded).
enum CallbackEncoderProperties {
    static func check(_ input: UnsafeBufferPointer<UInt8>) throws(PropertyViolation) {
        try checkRoundTrip(text(input))
        try checkDecodingAgreesWithReference(Array(input))
        try checkNoInjection(lines(of: input))
    }

    private static func checkRoundTrip(_ original: String) throws(PropertyViolation) {
        let encoded = PercentEncoding.encode(original)
        let bytes = Array(encoded.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                try require(index + 2 < bytes.count && isUppercaseHex(bytes[index + 1]) && isUppercaseHex(bytes[index + 2]),
                            "encode writes '%' only before two uppercase hex digits", shown(encoded))
                index += 3
            } else {
                try require(isUnreserved(bytes[index]), "encode leaves only unreserved bytes literal",
                            "byte \(bytes[index]) in \(shown(encoded))")
                index += 1
            }
        }
        let reserved = original.utf8.count(where: { !isUnreserved($0) })
        try require(bytes.count == original.utf8.count + 2 * reserved, "encode escapes exactly the reserved bytes",
                    "\(shown(original)) -> \(shown(encoded))")

        var appended: [UInt8] = Array("prefix".utf8)
        PercentEncoding.encode(original, into: &appended)
        try require(appended == Array("prefix".utf8) + bytes, "encode(into:) appends what encode returns")

        let decoded: String
        do {
            decoded = try PercentEncoding.decode(encoded)
        } catch {
            throw PropertyViolation(property: "decode(encode(s)) == s", detail: "decode failed: \(error.message)")
        }
        try require(sameBytes(decoded, original), "decode(encode(s)) == s",
                    "\(shown(original)) came back as \(shown(decoded))")
    }

    private static func checkDecodingAgreesWithReference(_ bytes: [UInt8]) throws(PropertyViolation) {
        let actual = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(URLParseError) -> String in try PercentEncoding.decode(buffer) }
        }
        let expected: Result<[UInt8], ReferenceDecoding.Failure>
        if let bad = ReferenceDecoding.firstInvalidUTF8(bytes) {
            expected = .failure(.invalidUTF8(at: bad))
        } else {
            expected = ReferenceDecoding.percentDecode(bytes, 0..<bytes.count, rejectingNUL: false)
        }
        switch (actual, expected) {
        case (.success(let decoded), .success(let reference)):
            try require(Array(decoded.utf8) == reference, "decode agrees with the reference decoder",
                        "\(shown(decoded)) versus \(shown(text(reference)))")
        case (.failure(let error), .failure(let reference)):
            let kind: URLParseError.Kind
            let offset: Int
            switch reference {
            case .malformedEscape(let at): (kind, offset) = (.malformedPercentEscape, at)
            case .encodedNUL(let at): (kind, offset) = (.nulByte, at)
            case .invalidUTF8(let at), .invalidDecodedUTF8(let at): (kind, offset) = (.invalidUTF8, at)
            }
            try require(error.kind == kind && error.offset == offset, "decode fails where and as the reference decoder does",
                        "\(error.kind) at \(error.offset) (\(error.message)), expected \(reference)")
        case (.success(let decoded), .failure(let reference)):
            throw PropertyViolation(property: "decode fails where and as the reference decoder does",
                                    detail: "decoded to \(shown(decoded)), expected \(reference)")
        case (.failure(let error), .success):
            throw PropertyViolation(property: "decode fails where and as the reference decoder does",
                                    detail: "failed with \(error.message), the reference decodes it")
        }

        if let string = String(validating: bytes, as: UTF8.self) {
            let fromString = Result { () throws(URLParseError) -> String in try PercentEncoding.decode(string) }
            switch (fromString, actual) {
            case (.success(let a), .success(let b)):
                try require(sameBytes(a, b), "decode of a String agrees with decode of its bytes")
            case (.failure(let a), .failure(let b)):
                try require(a.kind == b.kind && a.offset == b.offset, "decode of a String agrees with decode of its bytes",
                            "\(a.message) versus \(b.message)")
            default:
                throw PropertyViolation(property: "decode of a String agrees with decode of its bytes",
                                        detail: "one decodes, the other fails")
            }
        }
    }

    /// Callbacks tried when the input's first line is not one.
    private static let fallbackCallbacks = [
        "app://ok", "app://ok?keep=1", "app://ok?", "app://ok?a=1&", "app://ok#frag?x=1&x-success=evil://",
    ]

    private static func checkNoInjection(_ lines: [ArraySlice<UInt8>]) throws(PropertyViolation) {
        var parameters: [QueryParameter] = []
        var index = 1
        while index < lines.count {
            let value = index + 1 < lines.count ? text(lines[index + 1]) : ""
            parameters.append(QueryParameter(name: text(lines[index]), value: value))
            index += 2
        }
        let hasNUL = parameters.contains { $0.name.utf8.contains(0) || $0.value.utf8.contains(0) }

        let first = text(lines[0])
        var callbacks: [(text: String, url: RequestURL)] = []
        // The callback is written line-safe: its control bytes percent-encoded.
        if let url = try? RequestURL(parsing: CallbackURL.appending([], to: first)) { callbacks.append((first, url)) }
        let fallback = fallbackCallbacks[lines[0].count % fallbackCallbacks.count]
        callbacks.append((fallback, try! RequestURL(parsing: fallback)))

        // The kind only changes the word of a line without callback: one per input is enough.
        let kinds: [OutcomeKind] = [.success, .error, .cancel]
        do {
            let kind = kinds[lines.count % kinds.count]
            let outcome = Outcome(kind: kind, parameters: parameters)
            for (callback, callbackURL) in callbacks {
                let line = outcome.line(callback: callback)
                var written: [UInt8] = [0x2A]
                outcome.appendLine(callback: callback, to: &written)
                try require(written == [0x2A] + Array(line.utf8), "appendLine writes what line returns", shown(line))
                try require(!line.utf8.contains { $0 < 0x20 || $0 == 0x7F }, "a record is one line, with no raw control byte",
                            shown(line))
                try checkParses(line, as: expected(callbackURL, plus: parameters), hasNUL: hasNUL,
                                "appended outcome parameters come back exactly, and nothing else (callback \(shown(callback)))")
            }
            // No callback: `success?…`, read here as the path of an `app:` URL.
            let bare = outcome.line(callback: nil)
            let word = kind == .success ? "success" : kind == .error ? "error" : "cancel"
            try require(bare.utf8.starts(with: word.utf8), "a line without callback starts with the outcome name", shown(bare))
            let base = RequestURL(scheme: "app", pathSegments: [word])
            try checkParses("app:" + bare, as: expected(base, plus: parameters), hasNUL: hasNUL,
                            "a line without callback carries exactly the outcome parameters")
        }
    }

    /// `url` with `parameters` added the way the parser reads them back.
    private static func expected(_ url: RequestURL, plus parameters: [QueryParameter]) -> ReferenceURLParser.Components {
        var components = ReferenceURLParser.Components(url)
        for parameter in parameters {
            let value = Array(parameter.value.utf8)
            switch Array(parameter.name.utf8) {
            case Array("x-source".utf8): if components.source == nil { components.source = value }
            case Array("x-success".utf8): if components.success == nil { components.success = value }
            case Array("x-error".utf8): if components.error == nil { components.error = value }
            case Array("x-cancel".utf8): if components.cancel == nil { components.cancel = value }
            default: components.parameters += [Array(parameter.name.utf8), value]
            }
        }
        return components
    }

    private static func checkParses(
        _ line: String, as expected: ReferenceURLParser.Components, hasNUL: Bool, _ property: String
    ) throws(PropertyViolation) {
        let parsed: RequestURL
        do {
            parsed = try RequestURL(parsing: line)
        } catch {
            try require(hasNUL && error.kind == .nulByte, property, "\(shown(line)) does not parse: \(error.message)")
            return
        }
        try require(!hasNUL, "an escaped NUL is refused, never read as a shorter value", shown(line))
        if let difference = ReferenceURLParser.Components(parsed).firstDifference(from: expected) {
            throw PropertyViolation(property: property, detail: "\(shown(line)): \(difference)")
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~".utf8.contains(byte)
        }
    }

    private static func isUppercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
