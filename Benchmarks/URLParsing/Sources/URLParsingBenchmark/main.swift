// Times the request-line hot path against Foundation on the same generated input:
//   (a) RequestURL parsing + Outcome.appendLine of the success line;
//   (b) RequestLine (byte ranges, what the host's fast lane runs) + the same line from bytes;
//   (c) URLComponents + queryItems + building the same callback URL with URLComponents.
// Both read the same Strings and produce one callback URL per request.

import Foundation
import XCallbackURL

/// SplitMix64, so every run measures the same URLs.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func makeURLs(count: Int) -> [String] {
    var rng = SeededGenerator(state: 0x5EED)
    let operations = ["add", "subtract", "multiply", "divide"]
    let sources = ["Shortcuts", "Drafts", "Workflow", "Launch Center Pro", "Scriptable"]
    let words = ["total", "sum", "price", "net", "café", "weekly report", "Q3", "tax & fees", "a+b", "日本"]
    var urls: [String] = []
    urls.reserveCapacity(count)
    for _ in 0..<count {
        let lhs = String(Double(Int.random(in: -100_000...100_000, using: &rng)) / 100)
        let rhs = String(Double(Int.random(in: -100_000...100_000, using: &rng)) / 1000)
        let label = (0..<Int.random(in: 1...3, using: &rng)).map { _ in words.randomElement(using: &rng)! }
            .joined(separator: " ")
        let id = String(UInt64.random(in: 0...UInt64.max, using: &rng), radix: 16)
        let success = "shortcuts://x-callback-url/run?name=Sum&id=\(id)&step=\(Int.random(in: 1...9, using: &rng))"
        let error = "shortcuts://x-callback-url/error?id=\(id)&retry=\(Bool.random(using: &rng))"
        let url = "calc://x-callback-url/\(operations.randomElement(using: &rng)!)?lhs=\(lhs)&rhs=\(rhs)"
            + "&text=\(PercentEncoding.encode(label))"
            + "&x-source=\(PercentEncoding.encode(sources.randomElement(using: &rng)!))"
            + "&x-success=\(PercentEncoding.encode(success))"
            + "&x-error=\(PercentEncoding.encode(error))"
        urls.append(url)
    }
    return urls
}

@inline(never)
func runOurs(_ urls: [String]) -> Int {
    var output: [UInt8] = []
    output.reserveCapacity(1024)
    var checksum = 0
    for line in urls {
        output.removeAll(keepingCapacity: true)
        guard let request = try? RequestURL(parsing: line) else { continue }
        let outcome = Outcome.success([QueryParameter(name: "result", value: request.parameters.first("text") ?? "")])
        outcome.appendLine(callback: request.callbackURL(for: .success), to: &output)
        checksum &+= output.count
    }
    return checksum
}

@inline(never)
func runLine(_ urls: [String]) -> Int {
    var output: [UInt8] = []
    output.reserveCapacity(1024)
    var line = RequestLine()
    var scratch = [UInt8](repeating: 0, count: 4096)
    var checksum = 0
    for var text in urls {
        output.removeAll(keepingCapacity: true)
        text.withUTF8 { bytes in
            guard line.parse(bytes) else { return }
            scratch.withUnsafeMutableBufferPointer { scratch in
                let base = scratch.baseAddress!
                // "result" and the decoded text, then the decoded x-success URL after them.
                let result: StaticString = "result"
                base.update(from: result.utf8Start, count: 6)
                var valueCount = 0
                if let value = line.parameters.first(where: { parameter in
                    parameter.name.count == 4 && bytes[parameter.name.start] == UInt8(ascii: "t")
                        && bytes[parameter.name.start + 1] == UInt8(ascii: "e")
                        && bytes[parameter.name.start + 2] == UInt8(ascii: "x")
                        && bytes[parameter.name.start + 3] == UInt8(ascii: "t")
                })?.value {
                    valueCount = RequestLine.decodeValue(value, in: bytes, into: base + 6) ?? 0
                }
                let callbackStart = 6 + valueCount
                var callback: UnsafeBufferPointer<UInt8>?
                if let span = line.callback(for: .success),
                   let count = RequestLine.decodeValue(span, in: bytes, into: base + callbackStart) {
                    callback = UnsafeBufferPointer(start: base + callbackStart, count: count)
                }
                let parameters = [ByteParameter(nameStart: 0, nameCount: 6, valueStart: 6, valueCount: valueCount)]
                parameters.withUnsafeBufferPointer { parameters in
                    if let callback {
                        CallbackURL.append(prefix: callback, isURL: true, parameters: parameters, in: base, into: &output)
                    } else {
                        let word: StaticString = "success"
                        CallbackURL.append(prefix: UnsafeBufferPointer(start: word.utf8Start, count: 7), isURL: false,
                                           parameters: parameters, in: base, into: &output)
                    }
                }
            }
        }
        checksum &+= output.count
    }
    return checksum
}

@inline(never)
func runFoundation(_ urls: [String]) -> Int {
    var checksum = 0
    for line in urls {
        guard let components = URLComponents(string: line), let items = components.queryItems else { continue }
        var text = ""
        var success: String?
        for item in items {
            if item.name == "text", text.isEmpty { text = item.value ?? "" }
            if item.name == "x-success", success == nil { success = item.value }
        }
        guard let success, var callback = URLComponents(string: success) else { continue }
        callback.queryItems = (callback.queryItems ?? []) + [URLQueryItem(name: "result", value: text)]
        checksum &+= callback.string?.utf8.count ?? 0
    }
    return checksum
}

@inline(never)
func runParseOnly(_ urls: [String]) -> Int {
    var checksum = 0
    for line in urls {
        guard let request = try? RequestURL(parsing: line) else { continue }
        checksum &+= request.parameters.count
    }
    return checksum
}

@inline(never)
func runLineOnly(_ requests: [RequestURL]) -> Int {
    var output: [UInt8] = []
    output.reserveCapacity(1024)
    var checksum = 0
    for request in requests {
        output.removeAll(keepingCapacity: true)
        let outcome = Outcome.success([QueryParameter(name: "result", value: request.parameters.first("text") ?? "")])
        outcome.appendLine(callback: request.callbackURL(for: .success), to: &output)
        checksum &+= output.count
    }
    return checksum
}

/// Seconds for one pass of `body` over `input`.
func time<Input>(_ input: [Input], _ body: ([Input]) -> Int) -> (seconds: Double, checksum: Int) {
    let clock = ContinuousClock()
    var checksum = 0
    let elapsed = clock.measure { checksum = body(input) }
    return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, checksum)
}

/// Runs each contender `rounds` times, alternating so that a burst of load on a
/// shared machine hits both alike, and reports the best pass of each.
func compare<Input>(_ contenders: [(label: String, body: ([Input]) -> Int)], on input: [Input], rounds: Int) -> [Double] {
    var best = Array(repeating: Double.infinity, count: contenders.count)
    var checksums = Array(repeating: 0, count: contenders.count)
    for _ in 0..<rounds {
        for (index, contender) in contenders.enumerated() {
            let (seconds, checksum) = time(input, contender.body)
            best[index] = min(best[index], seconds)
            checksums[index] = checksum
        }
    }
    var rates: [Double] = []
    for (index, contender) in contenders.enumerated() {
        let rate = Double(input.count) / best[index]
        rates.append(rate)
        print("\(contender.label): \(input.count) URLs in \(String(format: "%.3f", best[index])) s = \(String(format: "%.0f", rate)) URLs/s, \(String(format: "%.0f", 1e9 / rate)) ns per URL (best of \(rounds); checksum \(checksums[index]))")
    }
    return rates
}

// Arguments: [count] [ours|foundation|breakdown] [rounds]
let arguments = Array(CommandLine.arguments.dropFirst())
let count = arguments.first.flatMap { Int($0) } ?? 1_000_000
let mode = arguments.count > 1 ? arguments[1] : "both"
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 3 : 3
let urls = makeURLs(count: count)
let averageBytes = Double(urls.reduce(0) { $0 + $1.utf8.count }) / Double(urls.count)
print("generated \(urls.count) URLs, \(String(format: "%.0f", averageBytes)) bytes on average; e.g.\n\(urls[0])")

// Warm both paths once so neither pays for first-touch costs in the timed runs.
_ = runOurs(Array(urls.prefix(10_000)))
_ = runFoundation(Array(urls.prefix(10_000)))

let ours = ("XCallbackURL (RequestURL + Outcome.appendLine)", runOurs)
let bytes = ("XCallbackURL (RequestLine byte ranges + the line from bytes)", runLine)
let foundation = ("Foundation (URLComponents + queryItems + callback)", runFoundation)
switch mode {
case "ours":
    _ = compare([ours], on: urls, rounds: rounds)
case "foundation":
    _ = compare([foundation], on: urls, rounds: rounds)
case "breakdown":
    _ = compare([("RequestURL(parsing:) only", runParseOnly)], on: urls, rounds: rounds)
    let requests = urls.map { try! RequestURL(parsing: $0) }
    _ = compare([("Outcome.appendLine only (RequestURL copied per item)", runLineOnly)], on: requests, rounds: rounds)
default:
    let rates = compare([ours, bytes, foundation], on: urls, rounds: rounds)
    print("ratio: RequestURL \(String(format: "%.1f", rates[0] / rates[2]))x Foundation, RequestLine \(String(format: "%.1f", rates[1] / rates[2]))x Foundation")
}
