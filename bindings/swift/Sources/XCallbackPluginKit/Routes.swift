/// A synchronous handler: the fastest kind; completes before it returns.
public typealias Handler = @Sendable (Request) throws -> Reply
/// An asynchronous handler: runs in a task; completes when it returns.
public typealias AsyncHandler = @Sendable (Request) async throws -> Reply

/// The routes a plug-in registers, collected by `Plugin`'s builder.
public struct Routes: Sendable {
    enum Form: Sendable {
        case action(scheme: String, action: String)
        case controllerAction(scheme: String, controller: String, action: String)
        case pattern(String)
    }

    enum Body: Sendable {
        case sync(Handler)
        case async(AsyncHandler)
    }

    struct Route: Sendable {
        let form: Form
        let body: Body
    }

    var routes: [Route] = []

    /// `scheme://x-callback-url/action`.
    public mutating func action(_ scheme: String, _ action: String, _ handler: @escaping Handler) {
        routes.append(Route(form: .action(scheme: scheme, action: action), body: .sync(handler)))
    }

    /// `scheme://x-callback-url/action`, answered asynchronously.
    public mutating func action(_ scheme: String, _ action: String, async handler: @escaping AsyncHandler) {
        routes.append(Route(form: .action(scheme: scheme, action: action), body: .async(handler)))
    }

    /// `scheme://controller/action`.
    public mutating func controller(_ scheme: String, _ controller: String, _ action: String, _ handler: @escaping Handler) {
        routes.append(Route(form: .controllerAction(scheme: scheme, controller: controller, action: action), body: .sync(handler)))
    }

    /// A pattern such as `pokedex://pokemons/:pokedexID`.
    public mutating func pattern(_ pattern: String, _ handler: @escaping Handler) {
        routes.append(Route(form: .pattern(pattern), body: .sync(handler)))
    }

    /// A pattern, answered asynchronously.
    public mutating func pattern(_ pattern: String, async handler: @escaping AsyncHandler) {
        routes.append(Route(form: .pattern(pattern), body: .async(handler)))
    }
}
