/// A word for a command line the user may paste into a shell: as it is
/// when it holds nothing a shell treats specially, else single-quoted.
enum ShellWord {
    static func quoted(_ word: String) -> String {
        let plain = word.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "/._-+:@%=,".utf8.contains(byte)
        }
        return plain && !word.isEmpty ? word : "'" + word.replacing("'", with: #"'\''"#) + "'"
    }
}
