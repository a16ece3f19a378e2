import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/usage.md ("run"): `plugins`, `routes`, `check`.
@Suite("plugins, routes and check", .ownThreads)
struct ListingTests {
    static let expectedRoutes: [String: Int] = ["alert": 1, "calculator": 4, "faulty": 10, "pokedex": 2]

    @Test("plugins lists every file with status, name, version, ABI and route count")
    func plugins() throws {
        let host = try HostFixture()
        let text = try xcallback(["plugins", "--plugins", host.plugins])
        #expect(text.status == .exited(0))
        #expect(text.lines.count == 4)
        for (name, count) in Self.expectedRoutes {
            #expect(text.lines.contains { $0.hasPrefix("loaded") && $0.contains(" \(name) ") && $0.contains("\(count) routes") },
                    "\(name): \(text.stdout)")
        }

        let json = try xcallback(["plugins", "--plugins", host.plugins, "--json"])
        #expect(json.status == .exited(0))
        let objects = try json.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 4)
        var routes: [String: Int] = [:]
        for object in objects {
            #expect(object["status"] as? String == "loaded")
            #expect((object["path"] as? String)?.hasPrefix(host.plugins + "/lib") == true)
            #expect(object["version"] as? String == "1.0.0")
            #expect((object["abi"] as? String)?.hasPrefix("1.") == true)
            if let name = object["name"] as? String { routes[name] = object["routes"] as? Int }
        }
        #expect(routes == Self.expectedRoutes)
    }

    @Test("plugins --json gives the sandbox as fields (mode, layers, groups, grants, missing); the prose is the text line's")
    func pluginsSandboxFields() throws {
        let host = try HostFixture(["Calculator"])
        let declaration = host.plugins + "/libCalculator.caps.toml"
        try "network = true\nmemory = 256\n[files]\nread = [\"/usr/share\"]\n".write(toFile: declaration, atomically: true, encoding: .utf8)
        chmod(declaration, 0o644)
        let json = try xcallback(["plugins", "--plugins", host.plugins, "--json"])
        #expect(json.status == .exited(0), "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(object["layers"] == nil, "the layers are the sandbox's: \(json.stdout)")
        let sandbox = try #require(object["sandbox"] as? [String: Any], "\(json.stdout)")
        #expect(sandbox["mode"] as? String == "auto")
        let layers = try #require(sandbox["layers"] as? [String], "\(json.stdout)")
        #expect((sandbox["groups"] as? [String])?.contains("@network") == true, "network is granted: \(json.stdout)")
        #expect(sandbox.keys.contains("missing") && (sandbox["missing"] is NSNull || sandbox["missing"] is String))
        #expect(sandbox["refused"] is NSNull)
        let grants = try #require(sandbox["grants"] as? [String: Any], "\(json.stdout)")
        #expect(grants["network"] as? Bool == true)
        #expect(grants["exec"] as? Bool == false)
        #expect(grants["memory"] as? Int == 256)
        #expect(grants["open_files"] as? Int == 128)
        #expect(grants["processes"] as? Int == 0)
        let files = try #require(grants["files"] as? [String: Any])
        #expect(files["read"] as? [String] == ["/usr/share"])
        #expect(files["write"] as? [String] == [])
        // The text line keeps the prose, with the same layers.
        let text = try xcallback(["plugins", "--plugins", host.plugins])
        #expect(text.stdout.contains("sandbox: network, read /usr/share, memory 256 MiB"), "\(text.stdout)")
        #expect(text.stdout.contains("layers: " + layers.joined(separator: ", ") + (geteuid() == 0 ? "; uid " : ")")), "\(text.stdout)")
        // Off: a mode, no layers, no grants.
        let off = try xcallback(["plugins", "--plugins", host.plugins, "--json", "--sandbox", "off"])
        let offSandbox = try #require((try JSONSerialization.jsonObject(with: Data(off.stdout.utf8)) as? [String: Any])?["sandbox"] as? [String: Any],
                                      "\(off.stdout)")
        #expect(offSandbox["mode"] as? String == "off")
        #expect(offSandbox["layers"] as? [String] == [])
        #expect(offSandbox["grants"] is NSNull)
    }

    @Test("plugins shows a file that is not a plug-in as rejected, with the reason")
    func pluginsRejected() throws {
        let host = try HostFixture(["Calculator"])
        let bogus = try host.addBogusPlugin()
        let text = try xcallback(["plugins", "--plugins", host.plugins])
        #expect(text.status == .exited(0))
        #expect(text.lines.count == 2)
        #expect(text.lines.contains { $0.hasPrefix("rejected") && $0.contains(bogus) }, "\(text.stdout)")
        // The host runs with the good one and says why it skipped the other.
        let run = try host.run(lines: ["calc://x-callback-url/add?lhs=1&rhs=1"])
        #expect(run.status == .exited(0))
        #expect(run.lines == ["success?result=2"])
        #expect(run.stderr.contains(bogus), "stderr: \(run.stderr)")
    }

    @Test("routes prints the route table: pattern → plug-in")
    func routes() throws {
        let host = try HostFixture()
        let text = try xcallback(["routes", "--plugins", host.plugins])
        #expect(text.status == .exited(0))
        for line in ["calc://x-callback-url/add → calculator", "calc://x-callback-url/divide → calculator",
                     "myapp://alert/show → alert", "faulty://x-callback-url/hang → faulty",
                     "pokedex://pokemons/:pokedexID → pokedex", "pokedex://pokemons → pokedex"] {
            #expect(text.lines.contains(line), "\(line) missing from \(text.stdout)")
        }
        // The host's own routes head the table.
        #expect(Array(text.lines.prefix(2)) == ["xcallback://x-callback-url/await → (built in)",
                                                 "xcallback://x-callback-url/response → (built in)"])
        #expect(text.lines.count == 2 + 17)

        let json = try xcallback(["routes", "--plugins", host.plugins, "--json"])
        let objects = try json.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 2 + 17)
        let pokedex = try #require(objects.first { $0["pattern"] as? String == "pokedex://pokemons/:pokedexID" })
        #expect(pokedex["plugin"] as? String == "pokedex")
        #expect(pokedex["builtIn"] as? Bool == false)
        let builtIn = objects.filter { $0["builtIn"] as? Bool == true }
        #expect(builtIn.map { $0["pattern"] as? String } == ["xcallback://x-callback-url/await", "xcallback://x-callback-url/response"])
        #expect(builtIn.allSatisfy { $0["plugin"] is NSNull })
    }

    @Test("check on a valid plug-in: exit 0 and its routes")
    func checkValid() throws {
        let scratch = try Scratch()
        let plugins = try scratch.pluginDirectory(["Calculator"])
        let result = try xcallback(["check", plugins + "/libCalculator.so"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        for action in ["add", "subtract", "multiply", "divide"] {
            #expect(result.lines.contains("calc://x-callback-url/\(action)"), "\(result.stdout)")
        }
        #expect(result.lines.first?.contains("calculator") == true)
    }

    /// The path of the libm the runner itself uses.
    static func libmPath() throws -> String {
        // /proc files report size 0: read them to the end by hand.
        var bytes: [UInt8] = []
        let descriptor = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        if dlopen("libm.so.6", RTLD_NOW) != nil, descriptor >= 0 {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(descriptor, &chunk, chunk.count)
                if count <= 0 { break }
                bytes += chunk[0..<count]
            }
        }
        if descriptor >= 0 { close(descriptor) }
        let maps = String(decoding: bytes, as: UTF8.self)
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libm.so.6") }),
              let slash = line.firstIndex(of: "/") else {
            throw HarnessError("cannot find libm.so.6")
        }
        return String(line[slash...])
    }

    @Test("check on files that are not plug-ins: non-zero and a one-line reason naming the file")
    func checkInvalid() throws {
        let scratch = try Scratch()
        let text = scratch.file("text.so")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: text))
        let empty = scratch.file("empty.so")
        try Data().write(to: URL(fileURLWithPath: empty))
        for file in [try Self.libmPath(), text, empty, scratch.file("missing.so"), scratch.path] {
            let result = try xcallback(["check", file], timeout: 10)
            #expect(result.status != .exited(0), "\(file)")
            #expect(result.status != .signaled(SIGKILL), "\(file)")
            let lines = ChildProcess.lines(result.stderr).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            #expect(lines.count == 1, "\(file): stderr was \(result.stderr)")
            #expect(result.stderr.contains(file), "\(file): stderr was \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(file): stdout was \(result.stdout)")
        }
    }
}

/// A file name is printed on one line, whatever it holds (docs/usage.md).
@Suite("Listing hostile file names", .ownThreads)
struct HostileFileNameTests {
    @Test("a plug-in file whose name holds a newline is listed on one line, escaped")
    func newlineInAFileName() throws {
        let fixture = try HostFixture(["Calculator"])
        let hostile = fixture.plugins + "/evil\nrejected  forged.so"
        #expect(copyfile(Products.plugin("Alert"), to: hostile))
        for command in ["plugins", "routes"] {
            let result = try xcallback([command, "--plugins", fixture.plugins])
            #expect(result.status == .exited(0), "stderr: \(result.stderr)")
            #expect(!result.lines.contains { $0.hasPrefix("rejected  forged") }, "\(command): \(result.lines)")
            if command == "plugins" {
                #expect(result.lines.count == 2, "\(result.lines)")
                #expect(result.lines.contains { $0.contains("evil\\nrejected  forged.so") }, "\(result.lines)")
            }
        }
        let json = try xcallback(["plugins", "--json", "--plugins", fixture.plugins])
        #expect(json.lines.count == 2)
        for line in json.lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)")
        }
    }
}
