// The Calculator's job with Foundation, for the throughput benchmark:
// reads calc x-callback URLs from stdin, one per line; for each one parses it
// with URLComponents (queryItems: RFC 3986 decoding, '+' stays a plus, as in
// xcallback), computes lhs OP rhs, and writes the x-success URL with
// `result=[LABEL=]VALUE` appended through URLComponents.percentEncodedQueryItems,
// encoded the way xcallback encodes (only unreserved bytes literal), or
// `success?result=...` when there is no x-success. For the suite's calc
// stream the output is byte-for-byte xcallback's (the driver checks it).
//
// I/O is plain and buffered (readLine, one write(2) per 64 KiB), so the
// comparison is about URL handling, not about reading lines.

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// RFC 3986 unreserved characters: the only ones xcallback leaves literal.
let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

/// DecimalText.format: rounded to 15 significant digits (half up, on the digits of the
/// shortest round-trip form), trailing zeros dropped; no fraction for integral values, an
/// exponent for very large or small ones.
func decimalText(_ value: Double) -> String {
    if value.isNaN { return "nan" }
    if value.isInfinite { return value < 0 ? "-inf" : "inf" }
    if value == 0 { return "0" }
    let significant = 15
    let text = String(value.magnitude)
    let parts = text.split(separator: "e", maxSplits: 1)
    var exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0  // value = 0.d1d2... x 10^exponent
    var digits: [UInt8] = []
    var pointSeen = false
    for byte in parts[0].utf8 {
        if byte == UInt8(ascii: ".") { pointSeen = true; continue }
        digits.append(byte &- UInt8(ascii: "0"))
        if !pointSeen { exponent += 1 }
    }
    while digits.count > 1 && digits[0] == 0 { digits.removeFirst(); exponent -= 1 }
    if digits.count > significant {
        let roundUp = digits[significant] >= 5
        digits.removeSubrange(significant...)
        if roundUp {
            var index = digits.count - 1
            while index >= 0 && digits[index] == 9 { digits[index] = 0; index -= 1 }
            if index >= 0 { digits[index] += 1 } else { digits.insert(1, at: 0); exponent += 1 }
        }
    }
    while digits.count > 1 && digits.last == 0 { digits.removeLast() }
    let body = String(decoding: digits.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
    let sign = value < 0 ? "-" : ""
    if exponent >= digits.count && exponent <= significant + 2 {
        return sign + body + String(repeating: "0", count: exponent - digits.count)
    }
    if exponent >= 1 && exponent < digits.count {
        let split = body.index(body.startIndex, offsetBy: exponent)
        return sign + body[..<split] + "." + body[split...]
    }
    if exponent >= -5 && exponent <= 0 {
        return sign + "0." + String(repeating: "0", count: -exponent) + body
    }
    let head = digits.count == 1 ? body : String(body.prefix(1)) + "." + body.dropFirst()
    let power = exponent - 1
    return sign + head + (power < 0 ? "e-" : "e+") + (abs(power) < 10 ? "0" : "") + String(abs(power))
}

func handle(_ line: String) -> String {
    guard let components = URLComponents(string: line), let items = components.queryItems else {
        return "error?errorCode=InvalidURL"
    }
    var lhs: Double?, rhs: Double?, label: String?, success: String?
    var seen = Set<String>()
    for item in items where seen.insert(item.name).inserted {
        switch item.name {
        case "lhs": lhs = item.value.flatMap(Double.init)
        case "rhs": rhs = item.value.flatMap(Double.init)
        case "text": label = item.value ?? ""
        case "x-success": success = item.value
        default: break
        }
    }
    guard let lhs, let rhs else { return "error?errorCode=ParameterError" }
    let value: Double
    switch components.path {
    case "/add": value = lhs + rhs
    case "/subtract": value = lhs - rhs
    case "/multiply": value = lhs * rhs
    case "/divide": value = lhs / rhs
    default: return "error?errorCode=NotFoundAction"
    }
    let text = decimalText(value)
    let result = label.map { "\($0)=\(text)" } ?? text
    let encoded = result.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    guard let success, var callback = URLComponents(string: success) else {
        return "success?result=\(encoded)"
    }
    callback.percentEncodedQueryItems = (callback.percentEncodedQueryItems ?? [])
        + [URLQueryItem(name: "result", value: encoded)]
    return callback.string ?? ""
}

func run() {
    var output: [UInt8] = []
    output.reserveCapacity(128 * 1024)
    func flush() {
        output.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(1, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { exit(1) }
                offset += written
            }
        }
        output.removeAll(keepingCapacity: true)
    }
    while var line = readLine(strippingNewline: true) {
        // Trim like the host does (only when needed: most lines have nothing to trim).
        if let first = line.utf8.first, let last = line.utf8.last,
           first <= 0x20 || last <= 0x20 {
            line = line.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if line.isEmpty || line.hasPrefix("#") { continue }
        output.append(contentsOf: handle(line).utf8)
        output.append(0x0A)
        if output.count >= 64 * 1024 { flush() }
    }
    flush()
}

run()
