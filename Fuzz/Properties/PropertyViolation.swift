// Shared by every fuzz target and by the corpus replay tests: the properties
// report a violation as a value, so a test can record it and a fuzz target can
// trap on it (libFuzzer then saves the input as a crash).

/// A property that did not hold for one input: which one, and what happened instead.
struct PropertyViolation: Error, CustomStringConvertible {
    var property: String
    var detail: String

    var description: String { "property violated: \(property): \(detail)" }
}

/// Throws a `PropertyViolation` unless `condition` holds.
@inline(__always)
func require(
    _ condition: Bool, _ property: @autoclosure () -> String, _ detail: @autoclosure () -> String = ""
) throws(PropertyViolation) {
    if !condition { throw PropertyViolation(property: property(), detail: detail()) }
}

/// Byte-for-byte equality of two strings. `==` on String compares canonical
/// equivalence, which would hide a component that changed its bytes.
@inline(__always)
func sameBytes(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
}

/// Byte-for-byte equality of two optional strings.
@inline(__always)
func sameBytes(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case let (a?, b?): return sameBytes(a, b)
    default: return false
    }
}

/// A string for a message: quoted, with controls and quotes escaped.
func shown(_ text: String?) -> String {
    text.map { $0.debugDescription } ?? "nil"
}

/// Splits fuzz input into lines on LF (an empty input is one empty line).
func lines(of bytes: UnsafeBufferPointer<UInt8>) -> [ArraySlice<UInt8>] {
    Array(bytes).split(separator: 0x0A, omittingEmptySubsequences: false)
}

/// Bytes as a String; invalid UTF-8 becomes U+FFFD, so every String a fuzz input
/// can describe is valid UTF-8, as a Swift String always is.
func text(_ bytes: some Collection<UInt8>) -> String {
    String(decoding: bytes, as: UTF8.self)
}
