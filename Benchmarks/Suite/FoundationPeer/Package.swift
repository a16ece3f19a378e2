// swift-tools-version: 6.0
// The Foundation peer of the throughput benchmark (Benchmarks/Suite): the
// Calculator's job done with URLComponents. Built by Benchmarks/Suite/run:
//   swift build -c release --package-path Benchmarks/Suite/FoundationPeer
import PackageDescription

let package = Package(
    name: "FoundationPeer",
    targets: [
        .executableTarget(name: "FoundationPeer"),
    ],
    swiftLanguageModes: [.v6]
)
