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
        // In your own package, depend on xcallback by URL, e.g.
        //   .package(url: "https://github.com/xcallback/xcallback", from: "1.0.0"),
        // This example sits inside the xcallback checkout, so it uses the path.
        .package(name: "xcallback", path: "../.."),
    ],
    targets: [
        .target(
            name: "Greeter",
            dependencies: [.product(name: "XCallbackPluginKit", package: "xcallback")]
        ),
    ]
)
