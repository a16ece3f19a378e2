import Testing
import XCallbackURL

enum PokemonType: String, CaseIterable, ParameterValue {
    case water, grass, fire
}

@Suite struct ParameterValueTests {
    let parameters = QueryParameters([
        QueryParameter("lhs", "2"), QueryParameter("rhs", "4.2"), QueryParameter("bad", "abc"),
        QueryParameter("flag", "YES"), QueryParameter("type", "water"), QueryParameter("types", "water, grass"),
        QueryParameter("types", "fire"), QueryParameter("types", ""), QueryParameter("n", "-17"),
    ])

    @Test func doubles() {
        for (text, value) in [("2", 2.0), ("4.2", 4.2), ("-1e3", -1000), ("+0.5", 0.5), (".5", 0.5), ("5.", 5), ("1E-2", 0.01)] {
            #expect(Double(parameterValue: text) == value, "\(text)")
        }
        for text in ["nan", "NaN", "inf", "-infinity", "", " 2", "2 ", "0x10", "1e", "e3", ".", "-", "1,5", "1e999", "1.2.3", "٣"] {
            #expect(Double(parameterValue: text) == nil, "\(text)")
        }
        #expect(Double.parameterTypeDescription == "a decimal number")
        #expect(Float(parameterValue: "1.5") == 1.5)
        #expect(Float(parameterValue: "1e39") == nil)
    }

    /// Most decimals skip strtod (Clinger's fast path); each must still be
    /// the very double the standard library reads, sign of zero included.
    @Test func decimalsReadAsTheStandardLibraryReadsThem() {
        var generator = SeededGenerator(seed: 0x5EED)
        let digits = Array("0123456789")
        func digitString(_ count: Int) -> String { String((0..<count).map { _ in digits[Int(generator.next() % 10)] }) }
        var texts = ["0", "-0", "0.0", "-0.000", "0e5", "-0e-400", "9007199254740992", "9007199254740993",
                     "1e22", "1e23", "1e-22", "1e-23", "4.35", "0.1", "123456789012345678", "1234567890123456789",
                     "12345678901234567890", "00000000000000000000001", "0.00000000000000000000001e22",
                     "1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308", "+.5", "5.", "-1e0000"]
        for _ in 0..<200_000 {
            var text = ""
            switch generator.next() % 3 {
            case 0: text += "-"
            case 1: text += generator.next() % 4 == 0 ? "+" : ""
            default: break
            }
            let whole = Int(generator.next() % 12)
            let fraction = Int(generator.next() % 12)
            text += String(repeating: "0", count: Int(generator.next() % 3)) + digitString(whole)
            if fraction > 0 || whole == 0 { text += "." + digitString(max(fraction, 1)) }
            if generator.next() % 3 == 0 {
                text += generator.next() % 2 == 0 ? "e" : "E"
                text += ["", "+", "-"][Int(generator.next() % 3)] + String(generator.next() % 40)
            }
            texts.append(text)
        }
        for text in texts {
            let expected = Double(text).flatMap { $0.isFinite ? $0 : nil }
            let read = Double(parameterValue: text)
            #expect(read?.bitPattern == expected?.bitPattern, "\(text): \(String(describing: read)) vs \(String(describing: expected))")
        }
    }

    @Test func integers() {
        #expect(Int(parameterValue: "25") == 25)
        #expect(Int(parameterValue: "-3") == -3)
        #expect(Int(parameterValue: "+3") == 3)
        for text in ["", "2.0", "0x10", " 1", "1e3", "99999999999999999999", "abc"] {
            #expect(Int(parameterValue: text) == nil, "\(text)")
        }
        #expect(Int.parameterTypeDescription == "an integer")
        #expect(Int32(parameterValue: "3000000000") == nil)
        #expect(UInt(parameterValue: "-1") == nil)
        #expect(UInt64(parameterValue: "18446744073709551615") == .max)
    }

    @Test func booleans() {
        for text in ["true", "TRUE", "1", "yes", "Yes"] { #expect(Bool(parameterValue: text) == true, "\(text)") }
        for text in ["false", "False", "0", "no", "NO"] { #expect(Bool(parameterValue: text) == false, "\(text)") }
        for text in ["", "y", "2", "on", "truee"] { #expect(Bool(parameterValue: text) == nil, "\(text)") }
        #expect(Bool.parameterTypeDescription == "true or false")
    }

    @Test func enumerations() {
        #expect(PokemonType(parameterValue: "grass") == .grass)
        #expect(PokemonType(parameterValue: "Grass") == nil)
        #expect(PokemonType.parameterTypeDescription == "one of water, grass, fire")
    }

    @Test func required() throws {
        #expect(try parameters.required("lhs", as: Double.self) == 2)
        let rhs: Double = try parameters.required("rhs")
        #expect(rhs == 4.2)
        #expect(try parameters.required("n", as: Int.self) == -17)
        #expect(try parameters.required("flag", as: Bool.self))
        #expect(try parameters.required("type", as: PokemonType.self) == .water)
        #expect(try parameters.required("bad", as: String.self) == "abc")
    }

    @Test func missingAndInvalidMessages() {
        #expect(throws: ParameterError(name: "zzz", expected: "a decimal number", problem: .missing)) {
            try parameters.required("zzz", as: Double.self)
        }
        do {
            _ = try parameters.required("zzz", as: Double.self)
        } catch {
            #expect(error.message == "missing required parameter 'zzz'")
            #expect(error.description == error.message)
        }
        do {
            _ = try parameters.required("bad", as: Double.self)
        } catch {
            #expect(error.problem == .invalid(value: "abc"))
            #expect(error.message == "parameter 'bad' must be a decimal number, got 'abc'")
        }
        do {
            _ = try parameters.required("bad", as: PokemonType.self)
        } catch {
            #expect(error.message == "parameter 'bad' must be one of water, grass, fire, got 'abc'")
        }
    }

    @Test func longValuesAreShortenedInMessages() {
        let long = String(repeating: "x", count: 500)
        let error = ParameterError(name: "a", expected: "an integer", problem: .invalid(value: long))
        #expect(error.message.count < 150)
        #expect(error.message.hasSuffix("…'"))
    }

    @Test func optional() throws {
        #expect(try parameters.optional("zzz", as: Int.self) == nil)
        #expect(try parameters.optional("n", as: Int.self) == -17)
        #expect(throws: ParameterError.self) { try parameters.optional("bad", as: Int.self) }
    }

    @Test func lists() throws {
        #expect(try parameters.list("types", of: PokemonType.self) == [.water, .grass, .fire])
        #expect(try parameters.list("absent", of: PokemonType.self) == [])
        #expect(try parameters.list("lhs", of: Int.self) == [2])
        let single = QueryParameters([QueryParameter("ids", "1,,2,"), QueryParameter("ids", "3")])
        #expect(try single.list("ids", of: Int.self) == [1, 2, 3])
        #expect(try single.list("ids", of: String.self) == ["1", "2", "3"])
        do {
            _ = try QueryParameters([QueryParameter("types", "water,lava")]).list("types", of: PokemonType.self)
            Issue.record("expected an error")
        } catch {
            #expect(error.problem == .invalid(value: "lava"))
            #expect(error.name == "types")
        }
    }

    @Test func namesMatchByteForByte() {
        let composed = QueryParameters([QueryParameter("caf\u{E9}", "composed"), QueryParameter("cafe\u{301}", "decomposed")])
        #expect(composed.first("caf\u{E9}") == "composed")
        #expect(composed.first("cafe\u{301}") == "decomposed")
        #expect(composed.all("cafe\u{301}") == ["decomposed"])
        #expect(composed.first("CAF\u{C9}") == nil)
    }

    @Test func decimalText() {
        #expect(DecimalText.format(6) == "6")
        #expect(DecimalText.format(6.2) == "6.2")
        #expect(DecimalText.format(-0.0) == "0")
        #expect(DecimalText.format(-1024) == "-1024")
        #expect(DecimalText.format(0.1 + 0.2) == "0.3")
        #expect(DecimalText.format(3.0000000000000004) == "3")
        #expect(DecimalText.format(1.0 / 3) == "0.333333333333333")
        #expect(DecimalText.format(2.0 / 3) == "0.666666666666667")
        #expect(DecimalText.format(1e15) == "1000000000000000")
        #expect(DecimalText.format(123456789012345680) == "1.23456789012346e+17")
        #expect(DecimalText.format(1e20) == "1e+20")
        #expect(DecimalText.format(-1.5e-7) == "-1.5e-07")
        #expect(DecimalText.format(0.00012) == "0.00012")
        #expect(DecimalText.format(9.9999999999999999) == "10")
        #expect(DecimalText.format(0.5) == "0.5")
        #expect(DecimalText.format(1024.25) == "1024.25")
        #expect(DecimalText.format(.nan) == "nan")
        #expect(DecimalText.format(-.infinity) == "-inf")
        // A negative value that needs rounding: its sign is not rounded with it.
        #expect(DecimalText.format(-1.0 / 3) == "-0.333333333333333")
        #expect(DecimalText.format(-123456789012345680) == "-1.23456789012346e+17")
        #expect(DecimalText.format(-9.9999999999999999e-7) == "-0.000001")
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<20_000 {
            let value = Double(bitPattern: generator.next() & ~(1 << 63))
            guard value.isFinite, value != 0 else { continue }
            #expect(DecimalText.format(-value) == "-" + DecimalText.format(value), "\(value)")
        }
    }

    /// Where `description` already has at most 15 significant digits and
    /// no exponent, `format` writes exactly it: the quick way that skips
    /// `description` for such values must agree, digit for digit.
    @Test func decimalTextIsTheShortestFormWhereThatFits() {
        var generator = SeededGenerator(seed: 11)
        func check(_ value: Double) {
            guard value.isFinite, value != 0, Int64(exactly: value) == nil else { return }
            let shortest = value.description
            let digits = shortest.filter(\.isNumber).drop { $0 == "0" }.count
            guard !shortest.contains("e"), digits <= 15 else { return }
            #expect(DecimalText.format(value) == shortest, "\(value)")
        }
        for value in [0.001, 0.0011, 0.07, 4.35, 2.675, 1.005, 99999999999999.98, 0.1 + 0.7, 1e15 - 0.5] {
            check(value)
            check(-value)
        }
        for _ in 0..<20_000 {
            // Sums and quotients of two-decimal numbers, as a calculator makes.
            let lhs = Double(Int64(truncatingIfNeeded: generator.next() % 20_000_001) - 10_000_000) / 100
            let rhs = Double(Int64(truncatingIfNeeded: generator.next() % 2_000_001) - 1_000_000) / 100
            check(lhs + rhs)
            check(lhs * rhs)
            if rhs != 0 { check(lhs / rhs) }
            // Decimals of 1 to 17 digits, and their neighbours.
            let scale = [1e-3, 1e-1, 1, 1e3, 1e7, 1e12][Int(generator.next() % 6)]
            let value = Double(generator.next() % 100_000_000_000_000_000) / 1e17 * scale
            check(value)
            check(value.nextUp)
            check(value.nextDown)
        }
    }

    @Test func collectionBehaviour() {
        #expect(parameters.count == 9)
        #expect(parameters[0] == QueryParameter(name: "lhs", value: "2"))
        #expect(parameters.contains("flag"))
        #expect(!parameters.contains("FLAG"))
        #expect(parameters.first("types") == "water, grass")
        #expect(parameters.all("types") == ["water, grass", "fire", ""])
        #expect(QueryParameters().isEmpty)
    }
}

