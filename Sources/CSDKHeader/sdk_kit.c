#include "sdk_kit.h"

/* The plug-in kits this binary was built with, byte for byte (#embed, as
 * for the header): the Swift package and the Rust crate under bindings/, so
 * `xcallback sdk --kit` and `xcallback new` work from the binary alone,
 * offline. Every file of bindings/ but .gitignore is here; a test
 * (SDKKitTests) names any that is missing. */
#pragma clang diagnostic ignored "-Wc23-extensions"
static const unsigned char file0[] = {
#embed "../../bindings/swift/Package.swift"
};
static const unsigned char file1[] = {
#embed "../../bindings/swift/Sources/CXCallback/abi_layout.c"
};
static const unsigned char file2[] = {
#embed "../../bindings/swift/Sources/CXCallback/include/xcallback.h"
};
static const unsigned char file3[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/ParameterError.swift"
};
static const unsigned char file4[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/ParameterValue.swift"
};
static const unsigned char file5[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/QueryParameter.swift"
};
static const unsigned char file6[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/QueryParameters.swift"
};
static const unsigned char file7[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/TypedParameters.swift"
};
static const unsigned char file8[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/Exports.swift"
};
static const unsigned char file9[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/HostBridge.swift"
};
static const unsigned char file10[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/Plugin.swift"
};
static const unsigned char file11[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/Reply.swift"
};
static const unsigned char file12[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/Request.swift"
};
static const unsigned char file13[] = {
#embed "../../bindings/swift/Sources/XCallbackPluginKit/Routes.swift"
};
static const unsigned char file14[] = {
#embed "../../bindings/rust/xcallback/Cargo.toml"
};
static const unsigned char file15[] = {
#embed "../../bindings/rust/xcallback/README.md"
};
static const unsigned char file16[] = {
#embed "../../bindings/rust/xcallback/src/lib.rs"
};
static const unsigned char file17[] = {
#embed "../../bindings/rust/xcallback/src/sys.rs"
};
static const unsigned char file18[] = {
#embed "../../bindings/swift/Sources/XCallbackParameters/DecimalText.swift"
};
static const unsigned char file19[] = {
#embed "../../bindings/rust/xcallback/rustfmt.toml"
};
static const unsigned char file20[] = {
#embed "../../bindings/rust/xcallback/src/fake.rs"
};
static const unsigned char file21[] = {
#embed "../../bindings/rust/xcallback/src/later.rs"
};
static const unsigned char file22[] = {
#embed "../../bindings/rust/xcallback/src/reply.rs"
};
static const unsigned char file23[] = {
#embed "../../bindings/rust/xcallback/src/request.rs"
};
static const unsigned char file24[] = {
#embed "../../bindings/rust/xcallback/src/routes.rs"
};
static const unsigned char file25[] = {
#embed "../../bindings/rust/xcallback/src/value.rs"
};

static const xcallback_sdk_file files[] = {
    {"swift/Package.swift", file0, sizeof file0},
    {"swift/Sources/CXCallback/abi_layout.c", file1, sizeof file1},
    {"swift/Sources/CXCallback/include/xcallback.h", file2, sizeof file2},
    {"swift/Sources/XCallbackParameters/ParameterError.swift", file3, sizeof file3},
    {"swift/Sources/XCallbackParameters/ParameterValue.swift", file4, sizeof file4},
    {"swift/Sources/XCallbackParameters/QueryParameter.swift", file5, sizeof file5},
    {"swift/Sources/XCallbackParameters/QueryParameters.swift", file6, sizeof file6},
    {"swift/Sources/XCallbackParameters/TypedParameters.swift", file7, sizeof file7},
    {"swift/Sources/XCallbackPluginKit/Exports.swift", file8, sizeof file8},
    {"swift/Sources/XCallbackPluginKit/HostBridge.swift", file9, sizeof file9},
    {"swift/Sources/XCallbackPluginKit/Plugin.swift", file10, sizeof file10},
    {"swift/Sources/XCallbackPluginKit/Reply.swift", file11, sizeof file11},
    {"swift/Sources/XCallbackPluginKit/Request.swift", file12, sizeof file12},
    {"swift/Sources/XCallbackPluginKit/Routes.swift", file13, sizeof file13},
    {"rust/xcallback/Cargo.toml", file14, sizeof file14},
    {"rust/xcallback/README.md", file15, sizeof file15},
    {"rust/xcallback/src/lib.rs", file16, sizeof file16},
    {"rust/xcallback/src/sys.rs", file17, sizeof file17},
    {"swift/Sources/XCallbackParameters/DecimalText.swift", file18, sizeof file18},
    {"rust/xcallback/rustfmt.toml", file19, sizeof file19},
    {"rust/xcallback/src/fake.rs", file20, sizeof file20},
    {"rust/xcallback/src/later.rs", file21, sizeof file21},
    {"rust/xcallback/src/reply.rs", file22, sizeof file22},
    {"rust/xcallback/src/request.rs", file23, sizeof file23},
    {"rust/xcallback/src/routes.rs", file24, sizeof file24},
    {"rust/xcallback/src/value.rs", file25, sizeof file25},
};

const xcallback_sdk_file *xcallback_sdk_kit_files(void) { return files; }
unsigned long xcallback_sdk_kit_file_count(void) { return sizeof files / sizeof files[0]; }
