// swift-tools-version: 6.0
// Micro-benchmark of the request-line hot path, kept out of `swift test`:
//   swift build -c release --package-path Benchmarks/URLParsing
//   Benchmarks/URLParsing/.build/release/URLParsingBenchmark [count]
import PackageDescription

// A path dependency's identity is its folder's name, which depends on where the
// repository was cloned: derive it from this file's path (<root>/Benchmarks/URLParsing/Package.swift).
let rootIdentity = String(#filePath.split(separator: "/").dropLast(3).last ?? "xcallback").lowercased()

let package = Package(
    name: "URLParsing",
    dependencies: [
        .package(path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "URLParsingBenchmark",
            dependencies: [.product(name: "XCallbackURL", package: rootIdentity)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
