/// One sample read back from the text format (`xcallback top`).
public struct ScrapedSample: Sendable, Equatable {
    public var name: String
    public var labels: [String: String]
    public var value: Double

    public init(name: String, labels: [String: String], value: Double) {
        self.name = name
        self.labels = labels
        self.value = value
    }
}

/// Reads the Prometheus text format back into samples: enough of it for
/// what a host writes (and what any exporter writes of the same shape);
/// comments and lines it cannot read are skipped.
public enum ScrapedSamples {
    public static func parse(_ text: String) -> [ScrapedSample] {
        var samples: [ScrapedSample] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("#") { continue }
            if let sample = parse(line: Substring(line)) { samples.append(sample) }
        }
        return samples
    }

    static func parse(line: Substring) -> ScrapedSample? {
        var rest = line[...]
        let nameEnd = rest.firstIndex(where: { $0 == "{" || $0 == " " }) ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while let first = rest.first, first != "}" {
                if first == "," { rest = rest.dropFirst(); continue }
                guard let equals = rest.firstIndex(of: "=") else { return nil }
                let label = String(rest[..<equals])
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character == "n" ? "\n" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
                labels[label] = value
            }
            guard rest.first == "}" else { return nil }
            rest = rest.dropFirst()
        }
        let fields = rest.split(separator: " ")
        guard let valueText = fields.first else { return nil }
        let value: Double
        switch valueText {
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        case "NaN": value = .nan
        default:
            guard let parsed = Double(valueText) else { return nil }
            value = parsed
        }
        return ScrapedSample(name: name, labels: labels, value: value)
    }
}
