/// Turns pattern text into a scheme and the concrete alternatives of its optional groups.
///
/// Grammar (whitespace is not allowed anywhere):
///
///     pattern  = scheme "://" host { "/" segment | group }
///     group    = "(" "/" segment { "/" segment | group } ")"
///     host     = segment
///     segment  = ":" name | "*" | literal
///     scheme   = ALPHA { ALPHA | DIGIT | "+" | "-" | "." }
///     name     = 1*( ALPHA | DIGIT | "_" | "-" )
///     literal  = 1*( any character but "/" "(" ")" "*" "?" "#", space and controls;
///                   "%XX" escapes are decoded; a leading ":" would make it an argument )
///
/// A `*` must end every alternative it appears in. Works on UTF-8 bytes so that error
/// offsets are byte offsets, like the URL parser's.
struct RoutePatternParser {
    struct Parsed {
        var scheme: String
        var alternatives: [[RouteSegment]]
        var argumentNames: [String]
    }

    /// Optional groups expand multiplicatively; this keeps a typo from exploding memory.
    static let maximumAlternatives = 256

    private let text: String
    private let bytes: [UInt8]
    private var position = 0

    init(_ text: String) {
        self.text = text
        self.bytes = Array(text.utf8)
    }

    /// A parsed piece of the pattern, remembering where it was written for error messages.
    private enum Element {
        case segment(RouteSegment, offset: Int)
        case group([Element], offset: Int)
    }

    private typealias Placed = (segment: RouteSegment, offset: Int)

    mutating func parse() throws(RoutePatternError) -> Parsed {
        let scheme = try parseScheme()
        // `scheme://` alone is the scheme's root route: an empty host and no
        // path, as `myapp://` (or `myapp://?x=1`) is requested.
        if position == bytes.count {
            return Parsed(scheme: scheme, alternatives: [[.literal("")]], argumentNames: [])
        }
        var elements = [try parseSegment(isHost: true)]
        try parseItems(into: &elements, groupOpenedAt: nil)
        let names = try argumentNames(of: elements)
        let alternatives = try expandAll(elements)
        return Parsed(scheme: scheme, alternatives: alternatives, argumentNames: names)
    }

    // MARK: Scheme

    private mutating func parseScheme() throws(RoutePatternError) -> String {
        var end = 0
        while end < bytes.count, bytes[end].isSchemeByte { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ":") else {
            // A "://" further on means the scheme holds a stray character; none means it was left out.
            if end < bytes.count, containsSeparator(from: end) {
                throw error(end, .invalidSchemeCharacter,
                            "invalid character \(quoted(at: end)) in scheme; a scheme is letters, digits, '+', '-' and '.'")
            }
            throw error(end, .missingSchemeSeparator,
                        "expected '://' after the scheme, as in 'calc://x-callback-url/add'")
        }
        if end == 0 {
            throw error(0, .emptyScheme, "empty scheme: expected a scheme name before '://'")
        }
        if !bytes[0].isASCIILetter {
            throw error(0, .invalidSchemeCharacter, "a scheme must start with a letter, not \(quoted(at: 0))")
        }
        guard containsSeparator(at: end) else {
            let written = String(decoding: bytes[0...end], as: UTF8.self)
            throw error(end + 1, .missingSchemeSeparator, "expected '//' after '\(written)'")
        }
        position = end + 3
        return String(decoding: bytes[0..<end], as: UTF8.self).lowercased()
    }

    private func containsSeparator(at index: Int) -> Bool {
        index + 2 < bytes.count && bytes[index] == UInt8(ascii: ":")
            && bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/")
    }

    private func containsSeparator(from start: Int) -> Bool {
        var index = start
        while index + 2 < bytes.count {
            if containsSeparator(at: index) { return true }
            index += 1
        }
        return false
    }

    // MARK: Segments and groups

    /// Reads `/segment` and `(group)` items until the end, or until the `)` closing the
    /// group opened at `groupOpenedAt`.
    private mutating func parseItems(into elements: inout [Element], groupOpenedAt: Int?) throws(RoutePatternError) {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "/"):
                position += 1
                elements.append(try parseSegment(isHost: false))
            case UInt8(ascii: "("):
                let open = position
                position += 1
                guard position < bytes.count, bytes[position] == UInt8(ascii: "/") else {
                    throw error(position, .emptyGroup,
                                "expected '/' after '(': an optional group holds whole segments, as in '(/:id)'")
                }
                var inner: [Element] = []
                try parseItems(into: &inner, groupOpenedAt: open)
                elements.append(.group(inner, offset: open))
            case UInt8(ascii: ")"):
                guard groupOpenedAt != nil else {
                    throw error(position, .unbalancedParenthesis, "unbalanced ')': there is no '(' to close")
                }
                position += 1
                return
            default:
                // Segment parsers stop only at a delimiter or throw, so this is a delimiter we missed.
                throw error(position, .invalidCharacter, "expected '/', '(' or ')', found \(quoted(at: position))")
            }
        }
        if let open = groupOpenedAt {
            throw error(bytes.count, .unbalancedParenthesis, "expected ')' to close the '(' at byte \(open)")
        }
    }

    private mutating func parseSegment(isHost: Bool) throws(RoutePatternError) -> Element {
        let start = position
        guard position < bytes.count, !bytes[position].isDelimiter else {
            if isHost {
                throw error(start, .missingHost,
                            "expected a host after '://' (a name, ':name' or '*'; the scheme's root route is '\(String(decoding: bytes[0..<start], as: UTF8.self))' alone)")
            }
            throw error(start, .emptySegment, "empty segment: expected a name, ':name' or '*' after '/'")
        }
        switch bytes[position] {
        case UInt8(ascii: ":"):
            position += 1
            let nameStart = position
            while position < bytes.count, bytes[position].isNameByte { position += 1 }
            if position < bytes.count, !bytes[position].isDelimiter {
                let kind: RoutePatternError.Kind = position == nameStart ? .emptyArgumentName : .invalidArgumentName
                throw error(position, kind,
                            "invalid character \(quoted(at: position)) in argument name; a name is letters, digits, '_' and '-'")
            }
            if position == nameStart {
                throw error(nameStart, .emptyArgumentName, "expected an argument name after ':'")
            }
            let name = String(decoding: bytes[nameStart..<position], as: UTF8.self)
            return .segment(.argument(name), offset: start)
        case UInt8(ascii: "*"):
            position += 1
            if position < bytes.count, !bytes[position].isDelimiter {
                throw error(start, .misplacedWildcard, "'*' must be a whole segment of its own")
            }
            return .segment(.wildcard, offset: start)
        default:
            return .segment(.literal(try parseLiteral(isHost: isHost)), offset: start)
        }
    }

    private mutating func parseLiteral(isHost: Bool) throws(RoutePatternError) -> String {
        let start = position
        var decoded: [UInt8] = []
        while position < bytes.count, !bytes[position].isDelimiter {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "*"):
                throw error(position, .misplacedWildcard,
                            "'*' is only allowed as a whole segment, and only as the last one (write '%2A' for a literal '*')")
            case UInt8(ascii: "?"), UInt8(ascii: "#"):
                throw error(position, .invalidCharacter,
                            "unexpected \(quoted(at: position)): a pattern matches the host and path only, not the query or fragment")
            case UInt8(ascii: " "):
                throw error(position, .invalidCharacter, "unexpected space (write '%20' for a literal space)")
            case 0..<0x20, 0x7F:
                throw error(position, .invalidCharacter, "unexpected control character \(quoted(at: position))")
            case UInt8(ascii: "%"):
                guard position + 2 < bytes.count,
                      let high = bytes[position + 1].hexValue, let low = bytes[position + 2].hexValue
                else {
                    throw error(position, .malformedPercentEscape, "'%' must be followed by two hex digits")
                }
                decoded.append(high << 4 | low)
                position += 3
            default:
                decoded.append(byte)
                position += 1
            }
        }
        guard let literal = String(validating: decoded, as: UTF8.self) else {
            throw error(start, .malformedPercentEscape, "percent escapes in this segment decode to invalid UTF-8")
        }
        // The host is case-insensitive (RFC 3986 3.2.2; docs/routing-and-isolation.md): stored
        // ASCII-lowercased, and requests' hosts are looked up the same way.
        if isHost { return RouteTrie.hostKey(literal) }
        return literal
    }

    // MARK: Checks and expansion

    private func argumentNames(of elements: [Element]) throws(RoutePatternError) -> [String] {
        var names: [String] = []
        var hasWildcard = false
        try collectNames(elements, into: &names, hasWildcard: &hasWildcard)
        if hasWildcard { names.append(RouteSegment.wildcardName) }
        return names
    }

    private func collectNames(_ elements: [Element], into names: inout [String], hasWildcard: inout Bool) throws(RoutePatternError) {
        for element in elements {
            switch element {
            case .segment(.argument(let name), let offset):
                // Groups nest or follow each other, never exclude each other: the longest
                // alternative holds every argument, so a repeated name is always a clash.
                if names.contains(name) {
                    throw error(offset, .duplicateArgumentName,
                                "duplicate argument name ':\(name)'; each argument needs its own name")
                }
                names.append(name)
            case .segment(.wildcard, _):
                hasWildcard = true
            case .segment(.literal, _):
                break
            case .group(let inner, _):
                try collectNames(inner, into: &names, hasWildcard: &hasWildcard)
            }
        }
    }

    /// Every concrete alternative, longest first; equal lengths keep the order in which
    /// "group present" comes before "group absent", reading left to right.
    private func expandAll(_ elements: [Element]) throws(RoutePatternError) -> [[RouteSegment]] {
        let count = alternativeCount(elements)
        if count > Self.maximumAlternatives {
            throw error(firstGroupOffset(elements) ?? 0, .tooManyAlternatives,
                        "optional groups expand to more than \(Self.maximumAlternatives) alternatives")
        }
        let expanded = expand(elements)
        for alternative in expanded {
            for (index, placed) in alternative.enumerated() where placed.segment == .wildcard && index != alternative.count - 1 {
                throw error(placed.offset, .misplacedWildcard, "'*' must be the last segment; nothing may follow it")
            }
        }
        var unique: [[RouteSegment]] = []
        // A set, not `unique.contains`: 256 alternatives would take 32,000 comparisons.
        var seen = Set<[RouteSegment]>()
        for alternative in expanded {
            let segments = alternative.map(\.segment)
            if seen.insert(segments).inserted { unique.append(segments) }
        }
        // Stable by construction: ties keep their expansion order.
        return unique.enumerated()
            .sorted { $0.element.count != $1.element.count ? $0.element.count > $1.element.count : $0.offset < $1.offset }
            .map(\.element)
    }

    private func expand(_ elements: [Element]) -> [[Placed]] {
        var results: [[Placed]] = [[]]
        for element in elements {
            switch element {
            case .segment(let segment, let offset):
                for index in results.indices { results[index].append((segment, offset)) }
            case .group(let inner, _):
                let options = expand(inner)
                var next: [[Placed]] = []
                next.reserveCapacity(results.count * (options.count + 1))
                for prefix in results {
                    for option in options { next.append(prefix + option) }
                    next.append(prefix)
                }
                results = next
            }
        }
        return results
    }

    private func alternativeCount(_ elements: [Element]) -> Int {
        var count = 1
        for case .group(let inner, _) in elements {
            count *= 1 + alternativeCount(inner)
            // Saturate so deep nesting cannot overflow.
            if count > Self.maximumAlternatives { return Self.maximumAlternatives + 1 }
        }
        return count
    }

    private func firstGroupOffset(_ elements: [Element]) -> Int? {
        for case .group(_, let offset) in elements { return offset }
        return nil
    }

    // MARK: Errors

    private func error(_ offset: Int, _ kind: RoutePatternError.Kind, _ message: String) -> RoutePatternError {
        RoutePatternError(pattern: text, offset: offset, kind: kind, message: "\(message) at byte \(offset)")
    }

    /// The character starting at `offset`, quoted for a message; controls as U+XXXX.
    private func quoted(at offset: Int) -> String {
        var end = offset + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        let character = String(decoding: bytes[offset..<end], as: UTF8.self)
        if let scalar = character.unicodeScalars.first, scalar.value < 0x20 || scalar.value == 0x7F {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        return "'\(character)'"
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool {
        (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
    }

    fileprivate var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }

    fileprivate var isSchemeByte: Bool {
        isASCIILetter || isASCIIDigit || self == UInt8(ascii: "+") || self == UInt8(ascii: "-") || self == UInt8(ascii: ".")
    }

    fileprivate var isNameByte: Bool {
        isASCIILetter || isASCIIDigit || self == UInt8(ascii: "_") || self == UInt8(ascii: "-")
    }

    fileprivate var isDelimiter: Bool {
        self == UInt8(ascii: "/") || self == UInt8(ascii: "(") || self == UInt8(ascii: ")")
    }

    fileprivate var hexValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
