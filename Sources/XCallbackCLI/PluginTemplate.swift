import XCallbackHost

/// The files of a new plug-in project (`xcallback new`): one route,
/// `SCHEME://x-callback-url/hello?name=`, in the language asked for.
struct PluginTemplate {
    struct File {
        var path: String
        var text: String
    }

    var name: String
    var language: TemplateLanguage
    /// The kits' folder (`KitLocation`): the Swift kit's package in
    /// `swift/`, the Rust crate in `rust/xcallback/`; nil for C.
    var kits: String?
    /// The xcallback that makes the project, as its build file, README and
    /// `make check` call it (`NewProjectBinary`).
    var binary = "xcallback"
    /// `binary` as a Makefile value.
    var binaryForMake = "xcallback"

    /// Schemes may not hold `_` (RFC 3986): `my_tool` answers `my-tool://`.
    var scheme: String { PluginNaming.scheme(forName: name) }

    var files: [File] {
        let common = [File(path: "requests.txt", text: """
            \(scheme)://x-callback-url/hello?name=Ada
            \(scheme)://x-callback-url/hello

            """)]
        switch language {
        case .c: return common + cFiles
        case .swift: return common + swiftFiles
        case .rust: return common + rustFiles
        case .wasm: return common + wasmFiles
        }
    }

    private var sandboxedNote: String {
        """
        The plug-in runs in a sandbox: no network, programs or processes, and writes only in its
        scratch folder, unless `lib\(name).caps.toml` beside the library asks for more (see the
        plug-in guide, "Declaring capabilities").
        """
    }

    /// The README; `mode` is the installed file's, `sandboxNote` replaces
    /// the paragraph on the worker's sandbox.
    func readme(build: String, library: String, kitNote: String, mode: String = "0755",
                sandboxNote: String? = nil) -> File {
        File(path: "README.md", text: """
            # \(name)

            An xcallback plug-in: `\(scheme)://x-callback-url/hello?name=Ada`
            answers `success?greeting=Hello%2C%20Ada%21`.

            ```sh
            \(build)                                   # builds \(library)
            \(binary) check \(library)
            \(binary) run --plugins \(library.contains("/") ? String(library[..<library.lastIndex(of: "/")!]) : ".") < requests.txt
            ```

            Install: copy the library under a dot-name into a plug-in folder not writable by others,
            then rename it into place, so a running host never sees half a file (the plug-in guide,
            "Installing safely"):

            ```sh
            dir=~/.local/share/xcallback/plugins; mkdir -p "$dir"
            install -m \(mode) \(library) "$dir/.\(library.split(separator: "/").last!).tmp"
            mv -f "$dir/.\(library.split(separator: "/").last!).tmp" "$dir/\(library.split(separator: "/").last!)"
            ```

            \(kitNote)
            \(sandboxNote ?? sandboxedNote)

            """)
    }

    // MARK: C

    private var cFiles: [File] {
        [
            File(path: "\(name).c", text: """
                /*
                 * \(name): an xcallback plug-in.
                 *   \(scheme)://x-callback-url/hello?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
                 */
                #include <stdio.h>
                #include <stdlib.h>
                #include <string.h>

                #include "xcallback.h"

                XCALLBACK_PLUGIN("\(name)", "0.1.0", "Says hello: \(scheme)://x-callback-url/hello?name=")

                /* Kept from registration; only read afterwards, from any thread. */
                static const xcallback_host_api *host;

                static void hello(const xcallback_request *request, xcallback_reply reply, void *user_data)
                {
                    (void)user_data;
                    /* A whole C string: the host refuses requests holding a NUL byte. */
                    const char *name = host->request_parameter(request, "name", NULL);
                    if (name == NULL) {
                        /* NULL domain: this plug-in's name, as for every error that names no other. */
                        host->reply_error(reply, "ParameterError", "missing required parameter 'name'", NULL);
                        return;
                    }
                    size_t size = strlen(name) + sizeof "Hello, !";
                    char *greeting = malloc(size);
                    if (greeting == NULL) {
                        host->reply_error(reply, "OutOfMemory", "cannot allocate the greeting", NULL);
                        return;
                    }
                    snprintf(greeting, size, "Hello, %s!", name);
                    const xcallback_param output[] = { { "greeting", greeting } };
                    host->reply_success(reply, output, 1); /* copies what it needs */
                    free(greeting);
                }

                XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
                {
                    host = api;
                    return api->register_action(plugin, "\(scheme)", "hello", hello, NULL);
                }

                """),
            File(path: "Makefile", text: """
                # `make` builds lib\(name).so; `make check` and `make run` try it.
                # XCALLBACK is the xcallback that made this project; another: make XCALLBACK=/path/to/xcallback
                XCALLBACK ?= \(binaryForMake)
                CFLAGS ?= -std=c11 -O2 -Wall -Wextra -Wmissing-prototypes

                lib\(name).so: \(name).c
                \t$(CC) $(CFLAGS) $(shell $(XCALLBACK) sdk --cflags) -shared -fPIC -fvisibility=hidden -Wl,-z,defs $< -o $@
                \tchmod 0755 $@

                check: lib\(name).so
                \t$(XCALLBACK) check ./lib\(name).so

                run: lib\(name).so
                \t$(XCALLBACK) run --plugins . < requests.txt

                clean:
                \trm -f lib\(name).so

                .PHONY: check run clean

                """),
            readme(build: "make", library: "lib\(name).so",
                   kitNote: "`make` finds `xcallback.h` with `\(binary) sdk --cflags` (`make XCALLBACK=...` names another xcallback)."),
        ]
    }

    // MARK: Swift

    private var swiftDependency: String {
        ".package(path: \"\(kits ?? ".")/swift\")"
    }

    private var swiftFiles: [File] {
        [
            File(path: "Package.swift", text: """
                // swift-tools-version: 6.0
                import PackageDescription

                let package = Package(
                    name: "\(name)",
                    products: [
                        // One dynamic library: the plug-in, with the kit linked in.
                        .library(name: "\(name)", type: .dynamic, targets: ["\(name)"]),
                    ],
                    dependencies: [
                        \(swiftDependency),
                    ],
                    targets: [
                        .target(name: "\(name)", dependencies: [.product(name: "XCallbackPluginKit", package: "swift")]),
                    ]
                )

                """),
            File(path: "Sources/\(name)/\(name).swift", text: """
                import XCallbackPluginKit

                /// \(scheme)://x-callback-url/hello?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
                let plugin = Plugin(name: "\(name)", version: "0.1.0",
                                    summary: "Says hello: \(scheme)://x-callback-url/hello?name=") { routes in
                    routes.action("\(scheme)", "hello") { request in
                        .success(["greeting": "Hello, \\(try request.parameter("name", as: String.self))!"])
                    }
                }

                // The two C entry points the host looks up.
                @_cdecl("xcallback_plugin_descriptor")
                public func pluginDescriptor() -> UnsafeRawPointer { plugin.descriptor }

                @_cdecl("xcallback_plugin_register")
                public func pluginRegister(_ api: UnsafeRawPointer?, _ handle: OpaquePointer?) -> Int32 {
                    plugin.register(api: api, plugin: handle)
                }

                """),
            File(path: ".gitignore", text: ".build/\nPackage.resolved\n"),
            readme(build: "swift build", library: ".build/debug/lib\(name).so",
                   kitNote: "The kit is the package at `\(kits ?? ".")/swift` (`xcallback sdk --kit`), which depends on nothing; point `Package.swift` elsewhere to change it."),
        ]
    }

    // MARK: Rust

    private var rustFiles: [File] {
        let dependency = "xcallback = { path = \"\(kits ?? ".")/rust/xcallback\" }"
        let crate = name
        return [
            File(path: "Cargo.toml", text: """
                [package]
                name = "\(crate)"
                version = "0.1.0"
                edition = "2021"

                [lib]
                # A shared library the host loads: target/debug/lib\(name).so
                crate-type = ["cdylib"]

                [dependencies]
                \(dependency)

                """),
            File(path: "src/lib.rs", text: """
                //! \(scheme)://x-callback-url/hello?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
                use xcallback::{plugin, Reply, Request, Result};

                /// A missing `name` is a ParameterError, in this plug-in's domain as
                /// every error is unless it names another: `?` answers it.
                fn hello(request: &Request) -> Result<Reply> {
                    let name: String = request.parameter("name")?;
                    Ok(Reply::success(&[("greeting", &format!("Hello, {name}!"))]))
                }

                plugin! {
                    name: "\(name)",
                    version: "0.1.0",
                    summary: "Says hello: \(scheme)://x-callback-url/hello?name=",
                    routes: |routes| {
                        routes.action("\(scheme)", "hello", hello);
                    }
                }

                """),
            File(path: ".gitignore", text: "target/\nCargo.lock\n"),
            readme(build: "cargo build", library: "target/debug/lib\(name).so",
                   kitNote: "The binding is the crate at `\(kits ?? ".")/rust/xcallback` (`xcallback sdk --kit`), which depends on nothing."),
        ]
    }
}
