#if Queue  // the package's Queue trait: swift build --traits Queue
#if canImport(Glibc)
import Glibc
#endif

/// A password given in a `postgresql://` URL on the command line can be read
/// by every user of the machine (`ps`, `/proc/PID/cmdline`) for as long as
/// the process runs. Once the arguments have been read, the process's own
/// copy of them, which is what the kernel shows, has each such password
/// overwritten with `x`s, as the MySQL client does. The window before that
/// is short, not closed: docs/queue.md recommends `PGPASSWORD` or `~/.pgpass`.
public enum CommandLinePasswords {
    /// Overwrites the passwords in this process's arguments. Call it after
    /// `CommandLine.arguments` was read (it keeps its own copy).
    public static func scrub() {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeMutableBufferPointer(
                start: UnsafeMutableRawPointer(argument).assumingMemoryBound(to: UInt8.self), count: strlen(argument))
            for range in passwordRanges(in: Array(bytes)) {
                for offset in range { bytes[offset] = UInt8(ascii: "x") }
            }
        }
    }

    /// Where the passwords are in `argument`: in every `postgresql://` or
    /// `postgres://` URL it holds (alone, or as in `--queue=URL`), the
    /// password of its user information and the value of a `password`
    /// option.
    static func passwordRanges(in argument: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var searchFrom = 0
        while let start = nextURL(in: argument, from: searchFrom) {
            let end = argument[start...].firstIndex { $0 == 0x20 } ?? argument.endIndex
            let authorityEnd = argument[start..<end].firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? end
            if let at = argument[start..<authorityEnd].lastIndex(of: 0x40),
               let colon = argument[start..<at].firstIndex(of: 0x3A), colon + 1 < at {
                ranges.append(colon + 1..<at)
            }
            if let question = argument[authorityEnd..<end].firstIndex(of: 0x3F) {
                let queryEnd = argument[question..<end].firstIndex(of: 0x23) ?? end
                var itemStart = question + 1
                while itemStart < queryEnd {
                    let itemEnd = argument[itemStart..<queryEnd].firstIndex(of: 0x26) ?? queryEnd
                    let name = Array("password=".utf8)
                    if itemEnd - itemStart > name.count, Array(argument[itemStart..<itemStart + name.count]) == name {
                        ranges.append(itemStart + name.count..<itemEnd)
                    }
                    itemStart = itemEnd + 1
                }
            }
            searchFrom = end
        }
        return ranges
    }

    /// The index just past the first `postgresql://` or `postgres://` at or after `from`.
    private static func nextURL(in argument: [UInt8], from: Int) -> Int? {
        [Array("postgresql://".utf8), Array("postgres://".utf8)].compactMap { prefix -> Int? in
            guard argument.count >= prefix.count, from <= argument.count - prefix.count else { return nil }
            return (from...(argument.count - prefix.count))
                .first { argument[$0..<$0 + prefix.count].elementsEqual(prefix) }
                .map { $0 + prefix.count }
        }.min()
    }
}
#endif
