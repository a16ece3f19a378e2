import Foundation
import Testing

/// Replays every seed (`Fuzz/corpus/TARGET/`) and every past finding
/// (`Fuzz/regressions/TARGET/`) through the fuzz targets' property checks, so a
/// regression fails `swift test` without a fuzzer. The checks are the same files the
/// fuzz targets are built from (`Fuzz/Properties/`); `Fuzz/run` does the fuzzing.
@Suite("Fuzz corpus replay")
struct FuzzCorpusReplayTests {
    /// A fuzz target's name (its directory under corpus/ and regressions/) and its check.
    struct Target: CustomStringConvertible, Sendable {
        var name: String
        var check: @Sendable (UnsafeBufferPointer<UInt8>) throws(PropertyViolation) -> Void
        var description: String { name }
    }

    static let targets = [
        Target(name: "url-parser", check: URLParserProperties.check),
        Target(name: "callback-encoder", check: CallbackEncoderProperties.check),
        Target(name: "route-matcher", check: RouteMatcherProperties.check),
        Target(name: "c-signature", check: CSignatureProperties.check),
        Target(name: "worker-wire", check: WorkerWireProperties.check),
    ]

    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// The files of `Fuzz/<kind>/<target>/`, sorted; none when the directory is absent.
    static func inputs(_ kind: String, of target: Target) -> [URL] {
        let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target.name)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
    }

    @Test(arguments: targets)
    func seedCorpusAndRegressionsKeepTheirProperties(_ target: Target) throws {
        let seeds = Self.inputs("corpus", of: target)
        // The seeds are what the fuzzer starts from; an empty list means a wrong path, not a pass.
        #expect(seeds.count >= 10, "only \(seeds.count) seeds found for \(target.name)")
        for file in seeds + Self.inputs("regressions", of: target) {
            let bytes = [UInt8](try Data(contentsOf: file))
            bytes.withUnsafeBufferPointer { buffer in
                do throws(PropertyViolation) {
                    try target.check(buffer)
                } catch {
                    Issue.record("\(target.name): \(file.lastPathComponent): \(error)")
                }
            }
        }
    }
}
