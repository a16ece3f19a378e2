import Testing
import XCallbackSandbox

@Suite("Capability files")
struct CapabilityFileTests {
    @Test("a declaration's keys become capabilities; keys it leaves out keep the defaults")
    func declaration() throws {
        let declared = try CapabilityDeclaration.parse("""
            network = true
            memory = 256
            [files]
            read = ["/usr/share/dict"]
            """, file: "x.caps.toml")
        #expect(declared.network)
        #expect(!declared.exec)
        #expect(declared.memoryMiB == 256)
        #expect(declared.openFiles == Capabilities.default.openFiles)
        #expect(declared.filesRead == ["/usr/share/dict"])
        #expect(declared.filesWrite.isEmpty)
    }

    @Test("mistakes are refused with the file, the key and what was wrong",
          arguments: [
              ("netwrok = true", "x.caps.toml: unknown key 'netwrok'"),
              ("network = \"yes\"", "'network' must be true or false"),
              ("ipc = 1", "'ipc' must be true or false"),
              ("memory = 1", "'memory' must be a whole number from 16"),
              ("processes = -1", "'processes' must be a whole number from 0"),
              ("[files]\nread = [\"relative\"]", "each entry must be an absolute path without '.' or '..'"),
              ("[files]\nwrite = [\"/a/../etc\"]", "each entry must be an absolute path without '.' or '..'"),
              ("[files]\nread = [\"/srv/data/x/.\"]", "each entry must be an absolute path without '.' or '..'"),
              ("[files]\nexecute = []", "unknown key 'execute'"),
              ("network = ", "invalid TOML"),
              ("environment = [\"A=B\"]", "each entry must be a variable name"),
          ])
    func mistakes(text: String, message: String) {
        #expect {
            _ = try CapabilityDeclaration.parse(text, file: "x.caps.toml")
        } throws: { error in
            (error as? CapabilityFileError)?.description.contains(message) == true
        }
    }

    @Test("ipc is declared, narrowed by the operator, and named in the summary; without it a worker gets its own IPC namespace")
    func ipc() throws {
        let declared = try CapabilityDeclaration.parse("ipc = true\n", file: "x.caps.toml")
        #expect(declared.ipc && !declared.network)
        #expect(declared.summary.hasPrefix("ipc, memory"))
        #expect(!Capabilities.default.ipc)
        let policy = try SandboxPolicy(parsing: "[plugin.libx]\nipc = false\n", file: "ops.toml")
        #expect(!declared.narrowed(by: policy.ceiling(forPluginAt: "/p/libx.so")).ipc)
        #expect(declared.narrowed(by: policy.ceiling(forPluginAt: "/p/liby.so")).ipc)
        #expect(Namespaces.wanted(by: .default) == [.ipc, .network])
        #expect(Namespaces.wanted(by: declared) == [.network])
        let kernel = KernelSupport(landlockABI: 7, seccomp: true, namespaces: [.user, .ipc, .network, .mount])
        #expect(kernel.layers(for: .default) == ["landlock 7", "seccomp", "file view", "ipc namespace", "network namespace"])
        #expect(KernelSupport(landlockABI: nil, seccomp: true).layers(for: declared)
                == ["seccomp", "no namespaces (the kernel lends none to this user)",
                    "no file view (stat and inotify see the host's paths; modes, times and xattrs refused)"])
    }

    @Test("the effective set is the intersection of the declaration and the operator's grants")
    func intersection() throws {
        var declared = Capabilities.default
        declared.network = true
        declared.exec = true
        declared.memoryMiB = 2048
        declared.filesRead = ["/srv/data/a", "/etc"]
        let policy = try SandboxPolicy(parsing: """
            [all]
            memory = 1024
            network = false
            [plugin.libweather]
            network = true
            """, file: "ops.toml")
        let weather = declared.narrowed(by: policy.ceiling(forPluginAt: "/plugins/libweather.so"))
        #expect(weather.network, "a plug-in's own section replaces the field from [all]")
        #expect(weather.exec)
        #expect(weather.memoryMiB == 1024)
        let other = declared.narrowed(by: policy.ceiling(forPluginAt: "/plugins/libother.so.1"))
        #expect(!other.network)

        var reads = CapabilityCeiling()
        reads.filesRead = ["/srv/data"]
        #expect(declared.narrowed(by: reads).filesRead == ["/srv/data/a"])
        var names = CapabilityCeiling()
        names.environment = ["B", "C"]
        var wanting = declared
        wanting.environment = ["A", "B"]
        #expect(wanting.narrowed(by: names).environment == ["B"])
        // An operator cannot grant what was not declared.
        var generous = CapabilityCeiling()
        generous.processes = 100
        #expect(declared.narrowed(by: generous).processes == 0)
    }

    @Test("a sidecar sits beside the plug-in file, named after it",
          arguments: [("/p/libcalc.so", "/p/libcalc.caps.toml", "libcalc"),
                      ("/p/libcalc.so.1.2", "/p/libcalc.caps.toml", "libcalc"),
                      ("/p/math.xcallback.toml", "/p/math.caps.toml", "math"),
                      ("plain", "plain.caps.toml", "plain")])
    func sidecar(plugin: String, sidecar: String, base: String) {
        #expect(CapabilityDeclaration.sidecarPath(for: plugin) == sidecar)
        #expect(CapabilityDeclaration.baseName(of: plugin) == base)
    }

    @Test("a plan survives the worker's command line, whatever bytes its paths hold")
    func planRoundTrip() {
        var capabilities = Capabilities.default
        capabilities.filesRead = ["/a b/c&d=e%f", "/ü/\u{7}"]
        capabilities.filesWrite = ["/w"]
        capabilities.processes = 3
        capabilities.ipc = true
        let plan = SandboxPlan(capabilities: capabilities, scratch: "/tmp/s x", pluginPath: "./p/lib&.so", strict: true)
        #expect(SandboxPlan(encoded: plan.encoded) == plan)
        #expect(!plan.encoded.contains(" "))
        #expect(SandboxPlan(encoded: "network=1&bogus=2") == nil)
    }
}
