import CXCallback
import Foundation
import Testing

@testable import XCallbackHost
@testable import XCallbackBridge

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Files `PluginLoader.load` must refuse, each with a message that names
/// the file and the field or the reason.
@Suite("Loader refusals", .ownThreads)
struct LoaderRejectTests {
    private func load(_ path: String) -> Result<LoadedPlugin, PluginLoadError> {
        Result { () throws(PluginLoadError) in try PluginLoader(logger: .capturing()).load(path) }
    }

    /// Loads `path` and returns the refusal, recording an issue when it loaded.
    private func refusal(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) -> PluginLoadError? {
        switch load(path) {
        case .success(let plugin):
            Issue.record("\(path) loaded as '\(plugin.name)' but should have been refused", sourceLocation: sourceLocation)
            return nil
        case .failure(let error):
            #expect(error.path == path, sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(path + ": "), "the message names the file", sourceLocation: sourceLocation)
            return error
        }
    }

    /// Builds a plug-in with one descriptor field changed and returns the refusal.
    private func descriptorRefusal(_ name: String, _ fields: (inout DescriptorFields) -> Void,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws -> PluginLoadError? {
        var descriptor = DescriptorFields()
        fields(&descriptor)
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin(name, source: descriptor.source, in: directory)
        return refusal(path, sourceLocation: sourceLocation)
    }

    struct DescriptorFields {
        var magic = "XCALLBACK_ABI_MAGIC"
        var major = "XCALLBACK_ABI_MAJOR"
        var minor = "XCALLBACK_ABI_MINOR"
        var size = "(uint32_t)sizeof(xcallback_descriptor)"
        var apiSize = "(uint32_t)sizeof(xcallback_host_api)"
        var name = "\"descriptor-test\""

        var source: String {
            CSource.descriptor(magic: magic, major: major, minor: minor, size: size, apiSize: apiSize, name: name)
        }
    }

    // MARK: not a plug-in

    @Test func aLibraryThatIsNotAPlugin() throws {
        let libm = try #require(SystemLibrary.path(of: "libm.so.6", symbol: "cos"))
        let error = try #require(refusal(libm))
        #expect(error.reason == .notAPlugin)
        #expect(error.description == "\(libm): not an xcallback plug-in (no xcallback_plugin_descriptor symbol)")
    }

    @Test func aCompiledLibraryWithoutTheEntryPoints() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("plain", source: "int plain_function(void) { return 1; }\n", in: directory)
        #expect(refusal(path)?.reason == .notAPlugin)
    }

    @Test func aPluginWithoutARegisterFunction() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("noregister", source: """
            #include "xcallback.h"
            XCALLBACK_PLUGIN("noregister", "1.0.0", NULL)
            """, in: directory)
        let error = try #require(refusal(path))
        #expect(error.reason == .missingRegister)
        #expect(error.description.contains("xcallback_plugin_register"))
    }

    @Test func aNullDescriptor() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("nulldescriptor", source: """
            #include "xcallback.h"
            XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void) { return NULL; }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *a, xcallback_plugin *p) { (void)a, (void)p; return 0; }
            """, in: directory)
        let error = try #require(refusal(path))
        #expect(error.reason == .badDescriptor(field: "descriptor", problem: "is NULL"))
    }

    @Test func aFileThatIsNotELF() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("text.so", "this is not a shared library\n", mode: 0o755)
        let error = try #require(refusal(path))
        guard case .cannotOpen(let message) = error.reason else {
            Issue.record("expected cannotOpen, got \(error.reason)")
            return
        }
        #expect(!message.isEmpty)
        #expect(error.description.hasPrefix("\(path): cannot load: "))
    }

    @Test func anEmptyFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("empty.so", "", mode: 0o755)
        guard case .cannotOpen = try #require(refusal(path)).reason else {
            Issue.record("an empty file must be cannotOpen")
            return
        }
    }

    @Test func aMissingFile() throws {
        let directory = try TemporaryDirectory()
        guard case .cannotOpen = try #require(refusal(directory.file("absent.so"))).reason else {
            Issue.record("a missing file must be cannotOpen")
            return
        }
    }

    // MARK: descriptor fields

    @Test func badMagic() throws {
        let error = try #require(try descriptorRefusal("badmagic") { $0.magic = "0x58434232u" })
        guard case .badDescriptor(let field, let problem) = error.reason else {
            Issue.record("\(error.reason)"); return
        }
        #expect(field == "magic")
        #expect(problem.contains("0x58434232") && problem.contains("0x58434231"))
        #expect(error.description.contains("descriptor field 'magic'"))
    }

    @Test func wrongABIMajor() throws {
        let error = try #require(try descriptorRefusal("major2") { $0.major = "2" })
        guard case .badDescriptor(let field, let problem) = error.reason else {
            Issue.record("\(error.reason)"); return
        }
        #expect(field == "abi_major")
        #expect(problem.hasPrefix("is 2,"))
        #expect(error.description.contains("descriptor field 'abi_major' is 2"))
    }

    @Test func abiMajorZeroIsRefusedToo() throws {
        let error = try #require(try descriptorRefusal("major0") { $0.major = "0" })
        #expect(error.reason.field == "abi_major")
    }

    @Test func abiMinorNewerThanTheHost() throws {
        let error = try #require(try descriptorRefusal("minor") { $0.minor = "XCALLBACK_ABI_MINOR + 1" })
        guard case .badDescriptor(let field, let problem) = error.reason else {
            Issue.record("\(error.reason)"); return
        }
        #expect(field == "abi_minor")
        #expect(problem.contains("newer than this host's ABI \(XCALLBACK_ABI_MAJOR).\(XCALLBACK_ABI_MINOR)"))
        #expect(error.description.contains("descriptor field 'abi_minor' is \(XCALLBACK_ABI_MINOR + 1)"))
    }

    /// Plug-ins built against an older minor load into a newer host.
    @Test(arguments: Array(0...Int(XCALLBACK_ABI_MINOR)))
    func olderOrEqualABIMinorLoads(minor: Int) throws {
        var descriptor = DescriptorFields()
        descriptor.minor = "\(minor)"
        // Before 1.2 the field after descriptor_size was `flags`, always 0.
        if minor < 2 { descriptor.apiSize = "0u" }
        descriptor.name = "\"minor\(minor)\""
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("minor\(minor)", source: descriptor.source, in: directory)
        let plugin = try load(path).get()
        #expect(plugin.info.abiMinor == minor)
        #expect(plugin.routes.count == 1)
    }

    @Test func descriptorSizeTooSmall() throws {
        let error = try #require(try descriptorRefusal("small") { $0.size = "16u" })
        guard case .badDescriptor(let field, let problem) = error.reason else {
            Issue.record("\(error.reason)"); return
        }
        #expect(field == "descriptor_size")
        #expect(problem.contains("is 16") && problem.contains("\(MemoryLayout<xcallback_descriptor>.size)"))
    }

    @Test func aLargerDescriptorSizeIsAccepted() throws {
        // A descriptor may grow at its end; the host reads the fields it knows.
        var descriptor = DescriptorFields()
        descriptor.size = "(uint32_t)sizeof(xcallback_descriptor) + 8u"
        descriptor.name = "\"bigger\""
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("bigger", source: descriptor.source, in: directory)
        let plugin = try load(path).get()
        #expect(plugin.name == "bigger")
    }

    @Test func aHostAPISizeOfAnotherLayoutNamesTheCause() throws {
        // A binding whose host API struct lost a field: it would call the wrong pointers.
        let error = try #require(try descriptorRefusal("wrongapi") { $0.apiSize = "(uint32_t)sizeof(xcallback_host_api) - 8u" })
        #expect(error.reason.field == "host_api_size")
        #expect(error.description.contains("xcallback_host_api is \(MemoryLayout<xcallback_host_api>.size) bytes"), "\(error)")
        #expect(error.description.contains("xcallback sdk --layout"), "\(error)")
    }

    @Test func aHostAPISizeIsReservedBeforeABI12() throws {
        let error = try #require(try descriptorRefusal("oldflags") { $0.minor = "1"; $0.apiSize = "1u" })
        #expect(error.reason.field == "host_api_size")
    }

    @Test func anUnstatedHostAPISizeIsAccepted() throws {
        var descriptor = DescriptorFields()
        descriptor.apiSize = "0u"
        descriptor.name = "\"unstated\""
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("unstated", source: descriptor.source, in: directory)
        #expect(try load(path).get().name == "unstated")
    }

    @Test(arguments: [
        ("\"bad name!\"", "bad name!"),
        ("\"\"", ""),
        ("\"a/b\"", "a/b"),
        ("\"caf\\xc3\\xa9\"", "café"),
        ("\"" + String(repeating: "x", count: 65) + "\"", String(repeating: "x", count: 65)),
    ])
    func badName(cName: String, name: String) throws {
        let error = try #require(try descriptorRefusal("badname") { $0.name = cName })
        guard case .badDescriptor(let field, let problem) = error.reason else {
            Issue.record("\(error.reason)"); return
        }
        #expect(field == "name")
        #expect(problem.contains("\"\(name)\""))
        #expect(problem.contains("A-Z a-z 0-9 . _ -"))
    }

    @Test func nullName() throws {
        let error = try #require(try descriptorRefusal("nullname") { $0.name = "NULL" })
        #expect(error.reason == .badDescriptor(field: "name", problem: "is NULL"))
    }

    @Test(arguments: ["a", "A.b_c-9", String(repeating: "z", count: 64)])
    func validNames(name: String) throws {
        let error = try descriptorNameLoads(name)
        #expect(error == nil, "\(String(describing: error))")
    }

    private func descriptorNameLoads(_ name: String) throws -> PluginLoadError? {
        var descriptor = DescriptorFields()
        descriptor.name = "\"\(name)\""
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("goodname", source: descriptor.source, in: directory)
        switch load(path) {
        case .success(let plugin):
            #expect(plugin.name == name)
            return nil
        case .failure(let error):
            return error
        }
    }

    /// The descriptor is checked before the plug-in's registration runs.
    @Test func registrationDoesNotRunForABadDescriptor() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("guarded", source: """
            #include "xcallback.h"
            XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void)
            {
                static const xcallback_descriptor d = { XCALLBACK_ABI_MAGIC, 2, 0,
                    (uint32_t)sizeof(xcallback_descriptor), 0u, "guarded", NULL, NULL };
                return &d;
            }
            static int registered;
            XCALLBACK_EXPORT int guarded_registered(void) { return registered; }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *a, xcallback_plugin *p)
            {
                (void)a, (void)p;
                registered = 1;
                return 0;
            }
            """, in: directory)
        #expect(refusal(path)?.reason.field == "abi_major")
        #expect(try loadedSymbol("guarded_registered", in: path, as: CIntFunction.self)() == 0)
    }

    // MARK: registration

    @Test func registrationThatFails() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin(
            "refuses", source: CSource.descriptor(name: "\"refuses\"", scheme: "refuses", registerStatus: "-42"),
            in: directory)
        let error = try #require(refusal(path))
        #expect(error.reason == .registrationFailed(status: -42))
        #expect(error.description == "\(path): xcallback_plugin_register failed with status -42")
    }

    @Test func registrationReturningAPositiveStatusFailsToo() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin(
            "refuses1", source: CSource.descriptor(name: "\"refuses1\"", scheme: "refuses1", registerStatus: "1"),
            in: directory)
        #expect(refusal(path)?.reason == .registrationFailed(status: 1))
    }

    @Test func aPluginWithoutRoutesLoads() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("noroutes", source: CSource.routes(name: "noroutes", patterns: []), in: directory)
        let plugin = try load(path).get()
        #expect(plugin.routes.isEmpty)
        #expect(plugin.info.path == path)
    }

    // MARK: paths

    /// `xcallback check hello.so`, as the guide's quick start runs it: a
    /// bare file name. `dlopen` reads a name without a slash as a library
    /// to search for (LD_LIBRARY_PATH, system directories), not as a file in
    /// the current directory, so the file that passed the file checks is not
    /// the one opened. Run in a child process, which may change directory.
    @Test func aBareFileNameIsLoadedFromTheCurrentDirectory() async throws {
        await #expect(processExitsWith: .success) {
            exit(BareNameLoad.run())
        }
    }

    // MARK: replacing a file

    /// The guide's install step (`cp new.so .tmp && mv -f .tmp hello.so`)
    /// gives the path a new file; loading the path again must load it. glibc
    /// matches `dlopen` names against libraries already loaded before it
    /// looks at the file, so the old library comes back (with --isolation
    /// none, a replaced plug-in keeps running its old code).
    @Test func aFileReplacedByRenameLoadsItsNewVersion() throws {
        let directory = try TemporaryDirectory()
        let builds = try directory.directory("builds")
        let first = try CCompiler.plugin("v1", source: CSource.descriptor(name: "\"reload\"", scheme: "reload1"),
                                         in: directory, into: builds)
        let second = try CCompiler.plugin("v2", source: CSource.descriptor(name: "\"reload\"", scheme: "reload2"),
                                          in: directory, into: builds)
        let path = directory.file("plugin.so")
        #expect(link(first, path) == 0)
        let old = try load(path).get()
        #expect(old.routes.map(\.text) == ["reload1://x-callback-url/ping"])

        #expect(link(second, directory.file(".plugin.so.tmp")) == 0)
        #expect(rename(directory.file(".plugin.so.tmp"), path) == 0)
        let new = try load(path).get()
        #expect(new.routes.map(\.text) == ["reload2://x-callback-url/ping"])
    }

    // MARK: truncated files (a half-copied plug-in)

    /// `cp` interrupted half-way: the SPEC (section 4) wants such a file
    /// rejected with a log line. The in-process loader is run in a child
    /// process (an exit test), since a cut inside a loadable segment makes
    /// `dlopen` fault.
    @Test func truncatedToHalfIsCannotOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = try TruncatedLoad.copy(in: directory) { $0 / 2 }
        await #expect(processExitsWith: .success) { [path = path as String] in
            exit(TruncatedLoad.load(path))
        }
    }

    @Test func truncatedInsideItsLoadableSegmentsIsCannotOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = try TruncatedLoad.copy(in: directory) { _ in 4096 }
        await #expect(processExitsWith: .success) { [path = path as String] in
            exit(TruncatedLoad.load(path))
        }
    }

    /// Cut before the program headers: glibc notices that one.
    @Test func truncatedToItsELFHeaderIsCannotOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = try TruncatedLoad.copy(in: directory) { _ in 100 }
        await #expect(processExitsWith: .success) { [path = path as String] in
            exit(TruncatedLoad.load(path))
        }
    }
}

/// The truncation exit tests: the parent makes the file (and removes it),
/// the child loads it and exits 0 when `PluginLoader.load` refused it with
/// `cannotOpen` and a message naming it, 1 when it loaded, 2 for any other
/// refusal; a signal when loading crashed.
enum TruncatedLoad {
    /// A copy of libAlert.so cut to `size(length)` bytes.
    static func copy(in directory: TemporaryDirectory, keepingBytes size: (Int) -> Int) throws -> String {
        let path = try directory.copy(Paths.sample("Alert"), to: "truncated.so")
        let length = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard truncate(path, off_t(size(length))) == 0 else { throw TestFailure("truncate \(path) failed") }
        return path
    }

    static func load(_ path: String) -> Int32 {
        do {
            let plugin = try PluginLoader(logger: .capturing()).load(path)
            report("\(path) loaded as '\(plugin.name)'\n")
            return 1
        } catch {
            guard case .cannotOpen = error.reason, error.description.hasPrefix(path + ": ") else {
                report("unexpected refusal: \(error)\n")
                return 2
            }
            return 0
        }
    }

    private static func report(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// Body of the bare-name exit test: 0 when `load("alertcopy.so")` after
/// `chdir` loads the file of that name in the current directory.
enum BareNameLoad {
    static func run() -> Int32 {
        guard let directory = try? TemporaryDirectory(),
              (try? directory.copy(Paths.sample("Alert"), to: "alertcopy.so")) != nil,
              chdir(directory.path) == 0 else { return 3 }
        do {
            let plugin = try PluginLoader(logger: .capturing()).load("alertcopy.so")
            return plugin.name == "alert" ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            return 2
        }
    }
}

extension PluginLoadError.Reason {
    /// The descriptor field a `badDescriptor` names.
    var field: String? {
        if case .badDescriptor(let field, _) = self { return field }
        return nil
    }
}
