// Fuzz target `route-matcher`: route patterns and the route table.
// The properties are in Fuzz/Properties/RouteMatcherProperties.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runFuzzInput(data, size, RouteMatcherProperties.check)
}
