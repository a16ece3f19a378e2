import XCallbackPluginKit

/// greeter://x-callback-url/greet?name=Ada&greeting=hi  ->  success?greeting=Hi%2C%20Ada%21
/// greeter://people/:name                                ->  the same, the name from the path
/// greeter://x-callback-url/whoami                       ->  success?route=…&numbered=yes&attempt=1
///
/// Examples/rust-plugin and Examples/c-plugin/greeter.c have the same routes
/// and answer requests.txt with the same records
/// (Tests/EndToEndTests/PluginParityTests.swift).
let greeter = Plugin(
    name: "greeter", version: "1.0.0",
    summary: "Greets people: greeter://x-callback-url/greet?name="
) { routes in
    routes.action("greeter", "greet") { request in
        try greet(request.parameter("name", as: String.self),
                  request.optionalParameter("greeting", as: Greeting.self) ?? .hello)
    }
    routes.pattern("greeter://people/:name") { request in
        try greet(request.argument("name", as: String.self), .hello)
    }
    // What the kit tells a handler about its request: the route that
    // matched, the host's number for it (the one its log lines carry) and
    // which attempt at it this is (1 unless a queue hands it out again).
    routes.action("greeter", "whoami") { request in
        .success(["route": request.route, "numbered": request.id > 0 ? "yes" : "no",
                  "attempt": String(request.attempt)])
    }
}

/// What `greeting=` may ask for; anything else is a `ParameterError` that
/// names these three.
enum Greeting: String, CaseIterable, ParameterValue {
    case hello, hi, welcome
}

private func greet(_ name: String, _ greeting: Greeting) throws -> Reply {
    guard !name.isEmpty else { throw EmptyName() }
    let word = switch greeting {
    case .hello: "Hello"
    case .hi: "Hi"
    case .welcome: "Welcome"
    }
    return .success(["greeting": "\(word), \(name)!"])
}

/// A thrown error that is not a `PluginError`: its code is the type's name,
/// its domain the plug-in's name ("greeter").
struct EmptyName: Error, CustomStringConvertible {
    var description: String { "the name is empty" }
}

// The two C entry points the host looks up; everything else is the kit's.
@_cdecl("xcallback_plugin_descriptor")
public func greeterDescriptor() -> UnsafeRawPointer { greeter.descriptor }

@_cdecl("xcallback_plugin_register")
public func greeterRegister(_ api: UnsafeRawPointer?, _ plugin: OpaquePointer?) -> Int32 {
    greeter.register(api: api, plugin: plugin)
}
