// Compiled into every fuzz target (not part of the package): runs one
// property check on libFuzzer's input and traps on a violation, which makes
// libFuzzer save the input as a crash file.

/// Runs `check` on the input libFuzzer hands to `LLVMFuzzerTestOneInput`.
func runFuzzInput(
    _ data: UnsafePointer<UInt8>?, _ size: Int,
    _ check: (UnsafeBufferPointer<UInt8>) throws(PropertyViolation) -> Void
) -> CInt {
    do {
        try check(UnsafeBufferPointer(start: data, count: size))
    } catch {
        fatalError(error.description)
    }
    return 0
}
