// swift-tools-version: 6.0
import PackageDescription

// The Swift kit for xcallback plug-ins, and the plug-in ABI itself: a
// plug-in's package depends on this one alone, and nothing here depends on
// anything but the standard library. The host's package uses it by path,
// so the header and the parameter types exist once.
//   CXCallback           xcallback.h, the one public C header: the plug-in ABI
//   XCallbackParameters  typed URL parameters (ParameterValue, ParameterError,
//                        QueryParameter) and how decimals are written
//                        (DecimalText): shared with the host, which reports
//                        the same errors and writes numbers the same way
//   XCallbackPluginKit   Plugin, routes, Request, Reply: the Swift kit a
//                        plug-in links statically into its one dynamic library
let package = Package(
    name: "XCallbackPluginKit",
    products: [
        .library(name: "XCallbackPluginKit", targets: ["XCallbackPluginKit"]),
        .library(name: "XCallbackParameters", targets: ["XCallbackParameters"]),
        .library(name: "CXCallback", targets: ["CXCallback"]),
    ],
    targets: [
        .target(name: "CXCallback"),
        .target(name: "XCallbackParameters"),
        .target(name: "XCallbackPluginKit", dependencies: ["CXCallback", "XCallbackParameters"]),
    ],
    swiftLanguageModes: [.v6]
)
