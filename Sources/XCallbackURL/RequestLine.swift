/// A request line parsed in place: offsets into the caller's bytes, with
/// nothing copied, decoded or allocated once its arrays have grown to fit.
///
/// This is the host's fast path. It accepts only lines whose meaning it can
/// give exactly as ``RequestURL`` would: the scheme, host, path and
/// parameter names carry no percent escapes. Everything else (and every
/// line ``RequestURL`` would reject) makes ``parse(_:)`` return false, and
/// the caller parses the line with ``RequestURL`` instead, which also
/// produces the error message. Values may be escaped: they are decoded only
/// when read, with ``decodeValue(_:in:into:)``.
public struct RequestLine {
    /// `bytes[start..<end]` of the parsed line.
    public struct Span: Sendable, Equatable, BitwiseCopyable {
        public var start: Int
        public var end: Int
        public var count: Int { end - start }
        public static let empty = Span(start: 0, end: 0)
    }

    /// One action parameter: its name is never escaped, its value may be.
    public struct Parameter: Sendable, Equatable, BitwiseCopyable {
        public var name: Span
        public var value: Span
    }

    /// As written (may hold uppercase letters).
    public private(set) var scheme = Span.empty
    /// As written; empty for `scheme:path` lines.
    public private(set) var host = Span.empty
    /// Path segments, empty ones dropped (as ``RequestURL/pathSegments``).
    public private(set) var path: [Span] = []
    /// Action parameters in order (the x-callback ones are split out).
    public private(set) var parameters: [Parameter] = []
    /// The raw, still escaped values of `x-source`, `x-success`, `x-error`
    /// and `x-cancel`: the first of each, as ``RequestURL`` keeps.
    public private(set) var source: Span?
    public private(set) var success: Span?
    public private(set) var error: Span?
    public private(set) var cancel: Span?

    public init() {
        path.reserveCapacity(8)
        parameters.reserveCapacity(16)
    }

    /// Parses `bytes`; false when the line needs ``RequestURL`` (see the type).
    public mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        path.removeAllKeepingStorage()
        parameters.removeAllKeepingStorage()
        source = nil
        success = nil
        error = nil
        cancel = nil
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        do throws(URLParseError) {
            try UTF8Validation.checkLine(bytes, validatingUTF8: true)
        } catch {
            return false
        }
        let n = bytes.count

        // Scheme: letters first, up to the ':' before any '/', '?' or '#'.
        guard base[0].isASCIILetter else { return false }
        var pos = 1
        while pos < n && base[pos] != ASCII.colon {
            guard base[pos].isSchemeCharacter else { return false }
            pos += 1
        }
        guard pos < n else { return false }
        scheme = Span(start: 0, end: pos)
        pos += 1

        // Authority, only after "//"; escaped hosts go the slow way.
        host = Span(start: pos, end: pos)
        if pos + 1 < n && base[pos] == ASCII.slash && base[pos + 1] == ASCII.slash {
            pos += 2
            let start = pos
            while pos < n {
                let byte = base[pos]
                if byte == ASCII.slash || byte == ASCII.question || byte == ASCII.hash { break }
                if byte == ASCII.percent { return false }
                pos += 1
            }
            host = Span(start: start, end: pos)
        }

        // Path, up to '?' or '#'.
        var segmentStart = pos
        while pos < n {
            let byte = base[pos]
            if byte == ASCII.slash {
                if pos > segmentStart { path.append(Span(start: segmentStart, end: pos)) }
                segmentStart = pos + 1
            } else if byte == ASCII.question || byte == ASCII.hash {
                break
            } else if byte == ASCII.percent {
                return false
            }
            pos += 1
        }
        if pos > segmentStart { path.append(Span(start: segmentStart, end: pos)) }

        // Query: pieces split on '&', each on its first '='.
        guard pos < n && base[pos] == ASCII.question else { return true }
        var pieceStart = pos + 1
        while true {
            let pieceEnd = ByteSearch.firstIndex(of: ASCII.ampersand, or: ASCII.hash, in: base, from: pieceStart, to: n, limit: n)
            if pieceEnd > pieceStart {
                let nameEnd = ByteSearch.firstIndex(of: ASCII.equals, in: base, from: pieceStart, to: pieceEnd, limit: n)
                if ByteSearch.firstIndex(of: ASCII.percent, in: base, from: pieceStart, to: nameEnd, limit: n) != nameEnd {
                    return false
                }
                let name = Span(start: pieceStart, end: nameEnd)
                let value = nameEnd < pieceEnd ? Span(start: nameEnd + 1, end: pieceEnd) : Span(start: pieceEnd, end: pieceEnd)
                // A repeated x-callback parameter is left to RequestURL, which
                // keeps the first but still checks the others' escapes.
                switch Self.callbackField(base, name) {
                case 0: parameters.append(Parameter(name: name, value: value))
                case 1: if source != nil { return false }; source = value
                case 2: if success != nil { return false }; success = value
                case 3: if error != nil { return false }; error = value
                default: if cancel != nil { return false }; cancel = value
                }
            }
            if pieceEnd == n || base[pieceEnd] == ASCII.hash { return true }
            pieceStart = pieceEnd + 1
        }
    }

    /// The callback value for an outcome of `kind`, as ``RequestURL/callbackURL(for:)``
    /// picks it (still escaped; nil when absent or empty).
    public func callback(for kind: OutcomeKind) -> Span? {
        let span: Span?
        switch kind {
        case .success: span = success
        case .error: span = error
        case .cancel: span = cancel
        }
        guard let span, span.count > 0 else { return nil }
        return span
    }

    /// Decodes a value of the line into `target`, which has room for at
    /// least `bytes.count - span.start` bytes (the decoder writes whole
    /// words). Returns the decoded length, or nil when ``RequestURL`` would
    /// reject the value (a malformed escape, an escaped NUL, invalid UTF-8).
    @inline(__always)
    public static func decodeValue(_ span: Span, in bytes: UnsafeBufferPointer<UInt8>,
                                   into target: UnsafeMutablePointer<UInt8>) -> Int? {
        PercentEncoding.decode(bytes, from: span.start, to: span.end, into: target)
    }

    /// 0 for an action parameter; 1...4 for x-source, x-success, x-error, x-cancel.
    /// Names are case-sensitive, like every parameter name.
    @inline(__always)
    private static func callbackField(_ base: UnsafePointer<UInt8>, _ name: Span) -> Int {
        let length = name.count
        let start = name.start
        guard length >= 7, length <= 9, base[start] == 0x78, base[start + 1] == 0x2D else { return 0 }
        let candidate: (StaticString, Int)
        switch (length, base[start + 2]) {
        case (8, 0x73): candidate = ("x-source", 1)
        case (9, 0x73): candidate = ("x-success", 2)
        case (7, 0x65): candidate = ("x-error", 3)
        case (8, 0x63): candidate = ("x-cancel", 4)
        default: return 0
        }
        let literal = candidate.0.utf8Start
        for k in 3..<length where base[start + k] != literal[k] { return 0 }
        return candidate.1
    }
}
