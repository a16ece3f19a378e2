// The request-line parser: one forward pass over UTF-8 bytes after the
// NUL/UTF-8 check, skipping to delimiters a word at a time in the query.
// Components without '%' become Strings straight from the line's bytes;
// escaped ones are decoded through one scratch buffer per line.

enum RequestURLParser {
    private enum CallbackField { case none, source, success, error, cancel }

    /// Parses `bytes` into `url`, whose fields are all overwritten.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, isKnownValidUTF8: Bool, into url: inout RequestURL)
        throws(URLParseError)
    {
        if bytes.isEmpty { throw .empty }
        try UTF8Validation.checkLine(bytes, validatingUTF8: !isKnownValidUTF8)
        // Room to decode any one component; on the stack for all but long lines.
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count) { (scratch) throws(URLParseError) in
            try parse(bytes, scratch: scratch, into: &url)
        }
    }

    private static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, scratch: UnsafeMutableBufferPointer<UInt8>, into url: inout RequestURL
    ) throws(URLParseError) {
        let n = bytes.count

        // Scheme: everything before the first ':', if that ':' comes before any '/', '?' or '#'.
        var pos = 0
        var schemeEnd = -1
        while pos < n {
            let byte = bytes[pos]
            if byte == ASCII.colon {
                schemeEnd = pos
                break
            }
            if byte == ASCII.slash || byte == ASCII.question || byte == ASCII.hash { break }
            pos += 1
        }
        if schemeEnd < 0 { throw .missingScheme }
        if schemeEnd == 0 { throw .emptyScheme() }
        if !bytes[0].isASCIILetter { throw .invalidSchemeCharacter(bytes[0], at: 0) }
        var schemeHasUppercase = false
        for index in 1..<schemeEnd {
            let byte = bytes[index]
            if !byte.isSchemeCharacter { throw .invalidSchemeCharacter(byte, at: index) }
            if byte >= 0x41 && byte <= 0x5A { schemeHasUppercase = true }
        }
        schemeHasUppercase = schemeHasUppercase || (bytes[0] >= 0x41 && bytes[0] <= 0x5A)
        var scheme = String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<schemeEnd]), as: UTF8.self)
        if schemeHasUppercase { scheme = scheme.lowercased() }

        guard let base = bytes.baseAddress else { throw .empty }
        pos = schemeEnd + 1

        // Authority, only after "//".
        var host = ""
        if pos + 1 < n && bytes[pos] == ASCII.slash && bytes[pos + 1] == ASCII.slash {
            pos += 2
            let start = pos
            while pos < n {
                let byte = bytes[pos]
                if byte == ASCII.slash || byte == ASCII.question || byte == ASCII.hash { break }
                pos += 1
            }
            if isXCallbackHost(bytes, from: start, to: pos) {
                host = RequestURL.xCallbackHost
            } else {
                host = try PercentEncoding.decodedString(bytes, from: start, to: pos, scratch: scratch, rejectingNUL: true)
                if host.utf8.count == 14 && host.lowercased() == RequestURL.xCallbackHost {
                    host = RequestURL.xCallbackHost
                }
            }
        }

        // Path, up to '?' or '#'.
        var segments: [String] = []
        var segmentStart = pos
        while pos < n {
            let byte = bytes[pos]
            if byte == ASCII.slash {
                if pos > segmentStart {
                    segments.append(
                        try PercentEncoding.decodedString(bytes, from: segmentStart, to: pos, scratch: scratch, rejectingNUL: true))
                }
                segmentStart = pos + 1
            } else if byte == ASCII.question || byte == ASCII.hash {
                break
            }
            pos += 1
        }
        if pos > segmentStart {
            segments.append(try PercentEncoding.decodedString(bytes, from: segmentStart, to: pos, scratch: scratch, rejectingNUL: true))
        }

        // Query: pieces split on '&', each on its first '='.
        var parameters: [QueryParameter] = []
        var source: String?
        var success: String?
        var error: String?
        var cancel: String?
        if pos < n && bytes[pos] == ASCII.question {
            // Most requests carry a handful of parameters: one allocation, no regrowth.
            parameters.reserveCapacity(8)
            var pieceStart = pos + 1
            while true {
                let pieceEnd = ByteSearch.firstIndex(
                    of: ASCII.ampersand, or: ASCII.hash, in: base, from: pieceStart, to: n, limit: n)
                if pieceEnd > pieceStart {
                    let nameEnd = ByteSearch.firstIndex(
                        of: ASCII.equals, in: base, from: pieceStart, to: pieceEnd, limit: n)
                    let valueStart = nameEnd < pieceEnd ? nameEnd + 1 : pieceEnd
                    var field = callbackField(bytes, from: pieceStart, to: nameEnd)
                    var name = ""
                    if field == .none {
                        name = try PercentEncoding.decodedString(bytes, from: pieceStart, to: nameEnd, scratch: scratch, rejectingNUL: true)
                        // An escaped name ("x%2Dsuccess") still names an x-callback parameter once decoded.
                        if name.utf8.count != nameEnd - pieceStart { field = callbackField(named: name) }
                    }
                    let value = try PercentEncoding.decodedString(bytes, from: valueStart, to: pieceEnd, scratch: scratch, rejectingNUL: true)
                    switch field {
                    case .none: parameters.append(QueryParameter(name: name, value: value))
                    case .source: if source == nil { source = value }
                    case .success: if success == nil { success = value }
                    case .error: if error == nil { error = value }
                    case .cancel: if cancel == nil { cancel = value }
                    }
                }
                pos = pieceEnd
                if pieceEnd == n || bytes[pieceEnd] == ASCII.hash { break }
                pieceStart = pieceEnd + 1
            }
        }

        var fragment: String?
        if pos < n && bytes[pos] == ASCII.hash {
            fragment = String(decoding: UnsafeBufferPointer(rebasing: bytes[(pos + 1)..<n]), as: UTF8.self)
        }

        url.scheme = scheme
        url.host = host
        url.pathSegments = segments
        url.parameters = QueryParameters(parameters)
        url.source = source
        url.successURL = success
        url.errorURL = error
        url.cancelURL = cancel
        url.fragment = fragment
    }

    /// Whether `bytes[start..<end]` spells "x-callback-url" in any case.
    @inline(__always)
    private static func isXCallbackHost(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Bool {
        guard end - start == 14 else { return false }
        let expected: StaticString = "x-callback-url"
        let literal = expected.utf8Start
        for k in 0..<14 where ASCII.lowercased(bytes[start + k]) != literal[k] { return false }
        return true
    }

    /// Which x-callback parameter, if any, the raw (escape-free) name `bytes[start..<end]` is.
    /// Names are case-sensitive, like every parameter name.
    @inline(__always)
    private static func callbackField(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int)
        -> CallbackField
    {
        let length = end - start
        // Every candidate is "x-" plus 5 to 7 letters.
        guard length >= 7, length <= 9, bytes[start] == 0x78, bytes[start + 1] == 0x2D else { return .none }
        let candidate: (StaticString, CallbackField)
        switch (length, bytes[start + 2]) {
        case (8, 0x73): candidate = ("x-source", .source)
        case (9, 0x73): candidate = ("x-success", .success)
        case (7, 0x65): candidate = ("x-error", .error)
        case (8, 0x63): candidate = ("x-cancel", .cancel)
        default: return .none
        }
        let literal = candidate.0.utf8Start
        for k in 3..<length where bytes[start + k] != literal[k] { return .none }
        return candidate.1
    }

    private static func callbackField(named name: String) -> CallbackField {
        switch name {
        case "x-source": return .source
        case "x-success": return .success
        case "x-error": return .error
        case "x-cancel": return .cancel
        default: return .none
        }
    }
}
