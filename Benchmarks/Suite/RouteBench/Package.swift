// swift-tools-version: 6.0
// Route lookup benchmark (Benchmarks/Suite): XCallbackRouting's RouteTable beside
// Vapor's RoutingKit TrieRouter on the same routes and requests. Built by
// Benchmarks/Suite/run:
//   swift build -c release --package-path Benchmarks/Suite/RouteBench
import PackageDescription

// A path dependency's identity is its folder's name, which depends on where the
// repository was cloned: derive it from this file's path
// (<root>/Benchmarks/Suite/RouteBench/Package.swift).
let rootIdentity = String(#filePath.split(separator: "/").dropLast(4).last ?? "xcallback").lowercased()

let package = Package(
    name: "RouteBench",
    dependencies: [
        .package(path: "../../.."),
        .package(url: "https://github.com/vapor/routing-kit", from: "4.9.0"),
    ],
    targets: [
        .executableTarget(
            name: "RouteBench",
            dependencies: [
                .product(name: "XCallbackRouting", package: rootIdentity),
                .product(name: "RoutingKit", package: "routing-kit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
