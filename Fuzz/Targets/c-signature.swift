// Fuzz target `c-signature`: the C declaration parser of binding manifests.
// The properties are in Fuzz/Properties/CSignatureProperties.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runFuzzInput(data, size, CSignatureProperties.check)
}
