#if canImport(Glibc)
import Glibc
#endif

/// How a project `xcallback new` makes names the xcallback that made it, in
/// its build file, its README and the "next:" line: plain `xcallback` when
/// that is what `$PATH` finds (an install: the project stays portable),
/// else this binary's absolute path (a checkout's `.build/debug/xcallback`,
/// a copy anywhere), so `make` works the same from either. `make
/// XCALLBACK=...` overrides it.
struct NewProjectBinary {
    /// The command as a shell word.
    let command: String

    init(environment: [String: String] = Environment.current) {
        let executable = Environment.executable
        if let onPath = ExternalTool.find("xcallback", environment: environment), Self.sameFile(onPath.path, executable) {
            command = "xcallback"
        } else {
            command = ShellWord.quoted(executable)
        }
    }

    /// The command as a Makefile variable's value: `$` and `#` mean
    /// something to make, whatever the shell quoting around them.
    var makeValue: String {
        command.replacing("$", with: "$$").replacing("#", with: "\\#")
    }

    private static func sameFile(_ first: String, _ second: String) -> Bool {
        var one = stat(), other = stat()
        guard stat(first, &one) == 0, stat(second, &other) == 0 else { return false }
        return one.st_dev == other.st_dev && one.st_ino == other.st_ino
    }
}
