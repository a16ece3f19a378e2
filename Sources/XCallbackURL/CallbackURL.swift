/// Building callback URLs: a URL from the request plus the outcome's parameters.
public enum CallbackURL {
    /// `url` with `parameters` percent-encoded and appended: after `&` if the URL
    /// already has a query, else after `?`, and before any `#fragment`.
    /// An empty query (`app://ok?`) or one ending in `&` gets no second separator.
    /// Control bytes in `url` (it was decoded from input) come out
    /// percent-encoded, so the result is always one line.
    public static func appending(_ parameters: [QueryParameter], to url: String) -> String {
        if parameters.isEmpty && !url.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return url }
        var output: [UInt8] = []
        append(parameters, to: url, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the bytes of `appending(parameters, to: url)` to `output`.
    public static func append(_ parameters: [QueryParameter], to url: String, into output: inout [UInt8]) {
        url.withUTF8Bytes { bytes in
            write(prefix: bytes, parameters: parameters, as: .callback, into: &output)
        }
    }

    /// How `write` joins the query to its prefix.
    enum Joining {
        /// The prefix is a URL: the query goes before its fragment, after '?' or '&'.
        case callback
        /// The prefix is a bare word ("success"): the query follows a '?'.
        case word
        /// Just the query, no separator.
        case queryOnly
    }

    /// Appends `prefix` and the encoded `parameters` to `output`, joined as `joining` says.
    ///
    /// The line is composed in one temporary buffer (on the stack unless it is long)
    /// and appended with one copy: appending byte by byte to an Array costs a
    /// uniqueness and capacity check per byte.
    static func write(
        prefix: UnsafeBufferPointer<UInt8>, parameters: [QueryParameter], as joining: Joining, into output: inout [UInt8]
    ) {
        // Encoding at most triples a byte; '=' and '&' add one each per parameter.
        var queryCapacity = 0
        for parameter in parameters {
            queryCapacity &+= 3 &* (parameter.name.utf8.count &+ parameter.value.utf8.count) &+ 2
        }
        write(prefix: prefix, hasQuery: !parameters.isEmpty, queryCapacity: queryCapacity, as: joining, into: &output) {
            writeQuery(parameters, to: $0)
        }
    }

    /// `write` for parameters given as byte ranges of `bytes` (names and values
    /// decoded, as a plug-in replied them): the host's fast lane, no Strings.
    public static func append(
        prefix: UnsafeBufferPointer<UInt8>, isURL: Bool, parameters: UnsafeBufferPointer<ByteParameter>,
        in bytes: UnsafePointer<UInt8>, into output: inout [UInt8]
    ) {
        var queryCapacity = 0
        for parameter in parameters { queryCapacity &+= 3 &* (parameter.nameCount &+ parameter.valueCount) &+ 2 }
        write(prefix: prefix, hasQuery: !parameters.isEmpty, queryCapacity: queryCapacity,
              as: isURL ? .callback : .word, into: &output) { target in
            var target = target
            for (index, parameter) in parameters.enumerated() {
                if index > 0 {
                    target.pointee = ASCII.ampersand
                    target += 1
                }
                target = PercentEncoding.writeEncoded(
                    UnsafeBufferPointer(start: bytes + parameter.nameStart, count: parameter.nameCount), to: target)
                target.pointee = ASCII.equals
                target += 1
                target = PercentEncoding.writeEncoded(
                    UnsafeBufferPointer(start: bytes + parameter.valueStart, count: parameter.valueCount), to: target)
            }
            return target
        }
    }

    /// Appends `prefix` and the query `writeQuery` writes (at most
    /// `queryCapacity` bytes) to `output`, joined as `joining` says.
    @inline(__always)
    private static func write(
        prefix: UnsafeBufferPointer<UInt8>, hasQuery: Bool, queryCapacity: Int, as joining: Joining,
        into output: inout [UInt8], writeQuery: (UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>
    ) {
        // A line-safe prefix at most triples; the separator adds one.
        let capacity = 3 &* prefix.count &+ 1 &+ queryCapacity
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            guard let start = buffer.baseAddress else { return }
            var target = start
            var fragmentStart = prefix.count
            var separator = joining == .queryOnly ? 0 : ASCII.question
            if let base = prefix.baseAddress {
                if joining == .callback {
                    fragmentStart = ByteSearch.firstIndex(
                        of: ASCII.hash, in: base, from: 0, to: prefix.count, limit: prefix.count)
                    let queryStart = ByteSearch.firstIndex(
                        of: ASCII.question, in: base, from: 0, to: fragmentStart, limit: prefix.count)
                    if queryStart < fragmentStart {
                        // Only the '?' that starts the query stands for "empty query": a later
                        // '?' is part of the last value ("app://ok?q=why?") and needs the '&'.
                        let queryIsEmpty = queryStart == fragmentStart - 1
                        separator = queryIsEmpty || base[fragmentStart - 1] == ASCII.ampersand ? 0 : ASCII.ampersand
                    }
                }
                target = PercentEncoding.writeLineSafe(UnsafeBufferPointer(start: base, count: fragmentStart), to: target)
            }
            if hasQuery {
                if separator != 0 {
                    target.pointee = separator
                    target += 1
                }
                target = writeQuery(target)
            }
            if let base = prefix.baseAddress, fragmentStart < prefix.count {
                target = PercentEncoding.writeLineSafe(
                    UnsafeBufferPointer(start: base + fragmentStart, count: prefix.count - fragmentStart), to: target)
            }
            output.append(contentsOf: UnsafeBufferPointer(start: start, count: target - start))
        }
    }

    /// Writes `name=value&name=value…`, each name and value percent-encoded; returns the position after it.
    @inline(__always)
    static func writeQuery(_ parameters: [QueryParameter], to target: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        var target = target
        for (index, parameter) in parameters.enumerated() {
            if index > 0 {
                target.pointee = ASCII.ampersand
                target += 1
            }
            target = parameter.name.withUTF8Bytes { PercentEncoding.writeEncoded($0, to: target) }
            target.pointee = ASCII.equals
            target += 1
            target = parameter.value.withUTF8Bytes { PercentEncoding.writeEncoded($0, to: target) }
        }
        return target
    }

    /// Appends `name=value&name=value…`, each name and value percent-encoded.
    static func appendQuery(_ parameters: [QueryParameter], to output: inout [UInt8]) {
        write(prefix: UnsafeBufferPointer(start: nil, count: 0), parameters: parameters, as: .queryOnly, into: &output)
    }
}

/// One name/value pair as byte ranges of a buffer (see `CallbackURL.append(prefix:isURL:parameters:in:into:)`).
public struct ByteParameter: Sendable, Equatable {
    public var nameStart: Int
    public var nameCount: Int
    public var valueStart: Int
    public var valueCount: Int

    public init(nameStart: Int, nameCount: Int, valueStart: Int, valueCount: Int) {
        self.nameStart = nameStart
        self.nameCount = nameCount
        self.valueStart = valueStart
        self.valueCount = valueCount
    }
}
