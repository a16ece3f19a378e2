// swift-tools-version: 6.0
// A Swift xcallback plug-in in a package of its own: one dynamic library that
// links the plug-in kit statically. `swift build -c release` makes
// .build/release/libGreeter.so; copy it into a plug-in folder.
import PackageDescription

let package = Package(
    name: "Greeter",
    products: [
        .library(name: "Greeter", type: .dynamic, targets: ["Greeter"]),
    ],
    dependencies: [
        // The kit is a package with no dependencies. In your own package, use
        // the folder `xcallback sdk --kit` prints (what `xcallback new` writes);
        // this example sits inside the xcallback checkout, so it uses that copy.
        .package(path: "../../bindings/swift"),
    ],
    targets: [
        .target(
            name: "Greeter",
            dependencies: [.product(name: "XCallbackPluginKit", package: "swift")]
        ),
    ]
)
