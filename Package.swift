// swift-tools-version: 6.1
import PackageDescription

// Layering, bottom up (a request travels the same way). Each module imports
// only modules above it in this list, and the compiler holds it to that:
//   bindings/swift    a package of its own, with no dependencies, that plug-ins
//                     use without this one: CXCallback (xcallback.h, the plug-in
//                     ABI), XCallbackParameters (typed URL parameters and their
//                     errors) and XCallbackPluginKit (the Swift kit)
//   XCallbackURL      parse a line, percent-coding, outcome encoding; re-exports
//                     XCallbackParameters (stdlib only: hot path)
//   XCallbackRouting  route patterns and the route table (stdlib only: hot path)
//   XCallbackSandbox  capabilities a plug-in declares and an operator grants, and
//                     the kernel sandbox a worker enters before it loads one
//   XCallbackSystem   threads, locks, what a child process is given, its output
//                     relayed to the log, and the diagnostics stream
//   XCallbackMetrics  the counters of `run --metrics` and their text formats
//                     (counted on the hot path with atomics alone)
//   XCallbackBridge   the C ABI bridge: plug-in files found, checked and loaded,
//                     the host API table, requests and replies in C's shapes, libffi
//   XCallbackWasm     WebAssembly plug-ins on WasmKit: the wasm ABI (the import
//                     module "xcallback"), its checked reads of guest memory, and
//                     the bounds (fuel, memory) of every call; it gives the
//                     bridge a `PluginFormat` for `.wasm` files, which the CLI
//                     installs, so nothing below the CLI imports WasmKit
//                     (built only with the trait Wasm, like the queue)
//   XCallbackWire     the frames and the shared page between host and worker,
//                     each with its encoder and its one checked decoder
//   XCallbackHost     the dispatcher and what it drives: plug-ins' lifecycle,
//                     inputs, deadlines, workers seen from the host, outputs
//   XCallbackQueue    the durable queue on PostgreSQL many hosts share: it claims
//                     requests, feeds them to a Host, and records their outcomes
//                     (built only with the trait Queue, like xcallback-queue's
//                     commands: see `traits` below)
//   XCallbackCLI      the command line: every command but the queue's, compiled
//                     once for both binaries (CSDKHeader embeds xcallback.h for `sdk`)
//   xcallback         a main on XCallbackCLI that hands `queue`, `enqueue`,
//                     `outcomes` and `run --queue` to xcallback-queue, so the
//                     binary that runs stdin, FIFOs, sockets and every worker
//                     carries no database client
//   xcallback-queue   a main on XCallbackCLI and XCallbackQueue: the same
//                     command line with the queue's commands
// The host's core is split into modules, and a request crosses several of them
// on its hot path (a lock, a native request, a frame). XCallbackSystem,
// XCallbackBridge and XCallbackWire are no products, so their `public` is the
// package's own; it is `public`, not `package`, because only public code is
// inlined and specialized across modules (without library evolution, package
// declarations never are), and full cross-module optimization lets it be.
let cxcallback: Target.Dependency = .product(name: "CXCallback", package: "swift")
let pluginKit: Target.Dependency = .product(name: "XCallbackPluginKit", package: "swift")

/// Only where the queue is built (`--traits Queue`).
let withQueue: TargetDependencyCondition? = .when(traits: ["Queue"])
/// Only where WebAssembly plug-ins are built (`--traits Wasm`).
let withWasm: TargetDependencyCondition? = .when(traits: ["Wasm"])

let crossModuleOptimized: [SwiftSetting] = [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]

let package = Package(
    name: "xcallback",
    products: [
        .executable(name: "xcallback", targets: ["xcallback"]),
        .executable(name: "xcallback-queue", targets: ["xcallback-queue"]),
        .library(name: "XCallbackURL", targets: ["XCallbackURL"]),
        .library(name: "XCallbackRouting", targets: ["XCallbackRouting"]),
        // Sample plug-ins: each one is a shared library the host loads with dlopen.
        .library(name: "Calculator", type: .dynamic, targets: ["Calculator"]),
        .library(name: "Pokedex", type: .dynamic, targets: ["Pokedex"]),
        .library(name: "Alert", type: .dynamic, targets: ["Alert"]),
        .library(name: "Faulty", type: .dynamic, targets: ["Faulty"]),
    ],
    // The durable queue brings a database client (postgres-nio, SwiftNIO,
    // BoringSSL: most of a clean build) that the rest never uses, so it is
    // built only when asked for: `swift build --traits Queue`. Without it,
    // `xcallback-queue` only says how to get it, and the queue's tests skip.
    // WebAssembly plug-ins bring WasmKit, which adds half again to a clean
    // debug build (docs/wasm.md, "Building it"), so they too are built only
    // when asked for: `swift build --traits Wasm` (or `--traits Queue,Wasm`).
    traits: [
        .trait(name: "Queue", description: "the durable queue on PostgreSQL: XCallbackQueue and xcallback-queue's commands"),
        .trait(name: "Wasm", description: "WebAssembly plug-ins (NAME.wasm) on WasmKit: XCallbackWasm, `sdk --wasm`, `new --language wasm`"),
    ],
    dependencies: [
        // The plug-in ABI and the Swift kit: a package of their own, with no
        // dependencies, which plug-ins use without this one.
        .package(path: "bindings/swift"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // The WebAssembly runtime of `.wasm` plug-ins (XCallbackWasm): an
        // interpreter in Swift, with fuel metering and a resource limiter.
        .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
    ],
    targets: [
        .target(name: "XCallbackURL", dependencies: [.product(name: "XCallbackParameters", package: "swift")]),
        .target(name: "XCallbackRouting"),
        .target(name: "CHostSupport"),
        // xcallback.h, embedded for `xcallback sdk` (C23 #embed).
        .target(name: "CSDKHeader"),
        .systemLibrary(
            name: "CSeccomp",
            pkgConfig: "libseccomp",
            providers: [.apt(["libseccomp-dev"])]
        ),
        // Landlock, seccomp, capabilities and the violation handlers: the
        // calls Swift cannot make (variadic prctl, signal handlers).
        .target(name: "CSandbox", dependencies: ["CSeccomp"]),
        .target(
            name: "XCallbackSandbox",
            dependencies: ["CSandbox", "XCallbackURL", .product(name: "TOMLKit", package: "TOMLKit")]
        ),
        .systemLibrary(
            name: "CFFI",
            pkgConfig: "libffi",
            providers: [.apt(["libffi-dev"])]
        ),
        // Threads, locks, what a child process is given, and the diagnostics
        // stream: the POSIX ground every other host module stands on.
        .target(
            name: "XCallbackSystem",
            dependencies: [
                "CHostSupport", "XCallbackURL", "XCallbackSandbox",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: crossModuleOptimized
        ),
        // The counters of `run --metrics`: the system module's lock for what
        // is rare (a plug-in loaded, a scrape), atomics for every request.
        .target(name: "XCallbackMetrics", dependencies: ["XCallbackSystem"], swiftSettings: crossModuleOptimized),
        // The C ABI bridge: a plug-in file checked and loaded, its
        // descriptor read, the host API table it registers through, requests
        // and replies in C's shapes, and libffi bindings.
        .target(
            name: "XCallbackBridge",
            dependencies: [
                cxcallback, "CHostSupport", "CFFI", "XCallbackURL", "XCallbackRouting", "XCallbackSystem",
                .product(name: "Logging", package: "swift-log"),
                // Binding manifests (`.xcallback.toml`).
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: crossModuleOptimized
        ),
        // WebAssembly plug-ins: the wasm ABI and WasmKit, behind the bridge's
        // `PluginFormat`, so that the host and the worker load a `.wasm` file
        // the way they load a `.so`, without importing WasmKit themselves.
        .target(
            name: "XCallbackWasm",
            dependencies: [
                "XCallbackURL", "XCallbackRouting", "XCallbackSandbox", "XCallbackSystem", "XCallbackBridge",
                .product(name: "WasmKit", package: "WasmKit", condition: withWasm),
                .product(name: "WasmParser", package: "WasmKit", condition: withWasm),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What crosses between the host and a worker process: the frames on
        // their socket and the page they share, each encoded and decoded in
        // one place. The host reads a worker's bytes through nothing else.
        .target(
            name: "XCallbackWire",
            dependencies: [cxcallback, "CHostSupport", "XCallbackURL", "XCallbackSandbox", "XCallbackSystem", "XCallbackBridge"],
            swiftSettings: crossModuleOptimized
        ),
        .target(
            name: "XCallbackHost",
            dependencies: [
                cxcallback, "CHostSupport", "XCallbackURL", "XCallbackRouting", "XCallbackSandbox",
                "XCallbackSystem", "XCallbackBridge", "XCallbackWire", "XCallbackMetrics",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "XCallbackQueue",
            dependencies: [
                "XCallbackHost", "XCallbackBridge", "XCallbackSystem", "XCallbackURL", "XCallbackMetrics",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: withQueue),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What differs between the two binaries is a `CLIEdition` each main
        // names: the queue's commands, `run --queue`, where workers start from.
        .target(
            name: "XCallbackCLI",
            dependencies: [
                "XCallbackHost", "XCallbackBridge", "XCallbackSystem", "XCallbackSandbox", "XCallbackRouting", "CSDKHeader",
                "CHostSupport", "XCallbackMetrics", "XCallbackWasm",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "xcallback",
            dependencies: [
                "XCallbackCLI", "XCallbackHost", "XCallbackBridge", "XCallbackSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Without the trait Queue, a stub (XCallback.swift's `#else`) that
        // links nothing: the command line is not linked a second time.
        .executableTarget(
            name: "xcallback-queue",
            dependencies: [
                .target(name: "XCallbackCLI", condition: withQueue),
                .target(name: "XCallbackHost", condition: withQueue),
                .target(name: "XCallbackQueue", condition: withQueue),
                .target(name: "XCallbackBridge", condition: withQueue),
                .target(name: "XCallbackSystem", condition: withQueue),
                .target(name: "XCallbackURL", condition: withQueue),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: withQueue),
                .product(name: "Logging", package: "swift-log", condition: withQueue),
            ]
        ),

        .target(name: "Calculator", dependencies: [pluginKit], path: "Plugins/Calculator"),
        .target(name: "Pokedex", dependencies: [pluginKit], path: "Plugins/Pokedex"),
        // C plug-ins export no headers of their own: xcallback.h is their only interface.
        .target(name: "Alert", dependencies: [cxcallback], path: "Plugins/Alert", publicHeadersPath: "."),
        .target(name: "Faulty", dependencies: [cxcallback], path: "Plugins/Faulty", publicHeadersPath: "."),

        .testTarget(name: "XCallbackURLTests", dependencies: ["XCallbackURL"]),
        .testTarget(name: "XCallbackRoutingTests", dependencies: ["XCallbackRouting"]),
        .testTarget(name: "XCallbackMetricsTests", dependencies: ["XCallbackMetrics"]),
        .testTarget(
            name: "XCallbackHostTests",
            dependencies: [
                "XCallbackHost", "XCallbackWire", "XCallbackBridge", "XCallbackSystem", "XCallbackURL", "XCallbackMetrics",
                cxcallback, pluginKit,
            ]
        ),
        .testTarget(name: "XCallbackSandboxTests", dependencies: ["XCallbackSandbox"]),
        // Runs against a real PostgreSQL the tests start from Debian's packages
        // in a temporary folder (skipped, with a message, where there is none).
        .testTarget(name: "XCallbackQueueTests", dependencies: ["XCallbackQueue", "XCallbackURL"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["xcallback", "xcallback-queue", .product(name: "WAT", package: "WasmKit", condition: withWasm)]
        ),
        // Modules assembled at test time from WebAssembly text (WasmKit's WAT).
        .testTarget(
            name: "XCallbackWasmTests",
            dependencies: [
                "XCallbackWasm", "XCallbackBridge", "XCallbackURL", "XCallbackSystem",
                .product(name: "WAT", package: "WasmKit", condition: withWasm), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FFITests",
            dependencies: [
                "XCallbackHost", "XCallbackBridge", "XCallbackSystem", "XCallbackURL", "XCallbackRouting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Replays the fuzz seed corpus and past findings through the fuzz targets'
        // own property checks (Fuzz/Properties, shared with `Fuzz/run`, which builds
        // the targets with swiftc outside SwiftPM).
        .testTarget(
            name: "FuzzCorpusReplayTests",
            dependencies: [
                "XCallbackURL", "XCallbackRouting", "XCallbackHost", "XCallbackBridge", "XCallbackWire", "XCallbackSystem",
            ],
            path: "Fuzz",
            exclude: ["run", "Targets", "corpus", "regressions", "dictionaries"],
            sources: ["Properties", "Tests"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
