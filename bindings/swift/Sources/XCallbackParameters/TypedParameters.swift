// Typed access to action parameters, in the manner of the Crossroad router.

extension QueryParameters {
    /// The first value of `name` converted to `T`; throws when it is absent or does not convert.
    @inlinable
    public func required<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T {
        guard let text = first(name) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .missing)
        }
        return try convert(text, name: name)
    }

    /// The first value of `name` converted to `T`, nil when absent; throws when present but not convertible.
    @inlinable
    public func optional<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T? {
        guard let text = first(name) else { return nil }
        return try convert(text, name: name)
    }

    /// Every value of `name`, from comma-separated lists and repeated keys alike, in order:
    /// `types=water,grass` and `types=water&types=grass` both give `[water, grass]`.
    /// Blanks around items and empty items are ignored; an absent name gives `[]`.
    public func list<T: ParameterValue>(_ name: String, of type: T.Type = T.self) throws(ParameterError) -> [T] {
        var values: [T] = []
        for item in items where item.name.hasSameUTF8(as: name) {
            for piece in item.value.utf8.split(separator: 0x2C, omittingEmptySubsequences: true) {
                let trimmed = Self.trimmingBlanks(piece)
                if trimmed.isEmpty { continue }
                values.append(try convert(String(decoding: trimmed, as: UTF8.self), name: name))
            }
        }
        return values
    }

    @inlinable
    func convert<T: ParameterValue>(_ text: String, name: String) throws(ParameterError) -> T {
        guard let value = T(parameterValue: text) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .invalid(value: text))
        }
        return value
    }

    private static func trimmingBlanks(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var bytes = bytes
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        return bytes
    }
}
