// Fuzz target `url-parser`: RequestURL(parsing:) on arbitrary bytes.
// The properties are in Fuzz/Properties/URLParserProperties.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runFuzzInput(data, size, URLParserProperties.check)
}
