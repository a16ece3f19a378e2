// Fuzz target `callback-encoder`: percent-coding and outcome parameters on callback URLs.
// The properties are in Fuzz/Properties/CallbackEncoderProperties.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runFuzzInput(data, size, CallbackEncoderProperties.check)
}
