import Synchronization
import XCallbackBridge
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// What the host knows about one plug-in file: loaded with its routes, or
/// refused and why. `xcallback plugins` prints these.
public struct PluginStatus: Sendable {
    public var path: String
    public var info: PluginInfo?
    public var routes: [RoutePattern]
    public var error: PluginLoadError?
    /// The C declarations of routes that call bound functions (typed
    /// function actions, manifests), by route text; absent for C handlers.
    public var signatures: [String: String]
    /// Routes it asked for that another plug-in, loaded first, owns.
    public var refusedRoutes: [RefusedRoute] = []

    public var isLoaded: Bool { error == nil && info != nil }

    public init(path: String, info: PluginInfo?, routes: [RoutePattern], error: PluginLoadError?,
                signatures: [String: String] = [:]) {
        self.path = path
        self.info = info
        self.routes = routes
        self.error = error
        self.signatures = signatures
    }

    /// The C declaration behind `route`, when it calls a bound function.
    public func signature(of route: RoutePattern) -> String? {
        signatures[route.text]
    }
}

/// The loaded plug-ins and the route table built from their registrations.
/// Readers take a snapshot of the table (a value copy, cheap until the next
/// change) so a reload never stalls a request in flight.
final class PluginRegistry: Sendable {
    private struct State {
        var table = RouteTable<RouteTarget>()
        var statuses: [PluginStatus] = []
        var schemes = RoutedSchemes([])
        /// The plug-in directories the last scan skipped though they exist
        /// (`PluginDiscovery.Scan.unreadableDirectories` less the missing),
        /// each as "DIR: why", for the `NotFoundAction` message.
        var skippedDirectories: [String] = []
        /// The fast lane's view of `table`, built on first use after a change.
        var snapshot: RouteSnapshot?
    }

    private let state = Lock(State())
    /// Moves on every change of the table, so a fast lane can tell that its
    /// snapshot is stale with one atomic load.
    private let tableGeneration = Atomic<UInt64>(0)

    /// The table's generation now (see `routeSnapshot()`).
    var generation: UInt64 { tableGeneration.load(ordering: .acquiring) }

    /// The current snapshot for the fast lane, and the generation it is of.
    func routeSnapshot() -> (RouteSnapshot, UInt64) {
        state.withLock { state in
            let snapshot = state.snapshot ?? RouteSnapshot(table: state.table)
            state.snapshot = snapshot
            return (snapshot, tableGeneration.load(ordering: .relaxed))
        }
    }

    /// Called under the lock after every change of the table.
    private func tableChanged(_ state: inout State) {
        state.snapshot = nil
        tableGeneration.add(1, ordering: .releasing)
    }

    var table: RouteTable<RouteTarget> { state.withLock { $0.table } }
    var statuses: [PluginStatus] { state.withLock { $0.statuses } }

    /// The directories that exist and were skipped at the last scan.
    var skippedDirectories: [String] {
        get { state.withLock { $0.skippedDirectories } }
        set { state.withLock { $0.skippedDirectories = newValue } }
    }

    /// Whether a route uses the scheme of `url`: a callback there is
    /// dispatched inside the host instead of printed or opened.
    func routesScheme(of url: String) -> Bool {
        state.withLock { $0.schemes.contains(schemeOf: url) }
    }

    /// `routesScheme(of:)` for a URL's bytes.
    func routesScheme(of url: UnsafeBufferPointer<UInt8>) -> Bool {
        state.withLock { $0.schemes.contains(schemeOf: url) }
    }

    /// The plug-in owning a route of the same shape as `pattern`, if any,
    /// not counting the plug-in loaded from `excludedPath` (the one being
    /// replaced: its new version may keep its own routes).
    func owner(ofSameShapeAs pattern: RoutePattern, excluding excludedPath: String? = nil) -> String? {
        state.withLock { state -> String? in
            let excluded = excludedPath.flatMap { path in state.statuses.first { $0.isLoaded && $0.path == path }?.info?.name }
            for existing in state.table.sameShapeRoutes(as: pattern) {
                let owners = state.table.routes.filter { $0.pattern == existing }.map(\.value.pluginName)
                if let owner = owners.first(where: { $0 != excluded }) { return owner }
            }
            return nil
        }
    }

    /// Every route plug-ins own (pattern, owner), but the plug-in loaded
    /// from `excludedPath`'s: what a worker starting for that file is told.
    func takenRoutes(excluding excludedPath: String) -> [QueryParameter] {
        state.withLock { state in
            let excluded = state.statuses.first { $0.isLoaded && $0.path == excludedPath }?.info?.name
            return state.table.routes.filter { $0.value.pluginName != excluded }
                .map { QueryParameter(name: $0.pattern.text, value: $0.value.pluginName) }
        }
    }

    /// Whether a plug-in of that name is loaded, and from where.
    func path(ofPluginNamed name: String) -> String? {
        state.withLock { $0.statuses.first { $0.isLoaded && $0.info?.name == name }?.path }
    }

    /// Adds a loaded plug-in's routes, in its registration order; each
    /// keeps the index of its handler in the plug-in.
    func add(_ endpoint: any PluginEndpoint, info: PluginInfo, routes: [(pattern: RoutePattern, handler: Int)]) {
        state.withLock { state in
            for route in routes {
                state.table.insert(route.pattern, value: RouteTarget(endpoint: endpoint, handlerIndex: route.handler))
                state.schemes.insert(route.pattern.scheme)
            }
            tableChanged(&state)
            state.statuses.append(PluginStatus(path: info.path, info: info, routes: routes.map(\.pattern), error: nil))
        }
    }

    /// Adds the host's own routes (client correlation): in the table, so
    /// requests and chain callbacks reach them, but not listed as a plug-in.
    func addBuiltIn(_ endpoint: any PluginEndpoint, routes: [(pattern: RoutePattern, handler: Int)]) {
        state.withLock { state in
            for route in routes {
                state.table.insert(route.pattern, value: RouteTarget(endpoint: endpoint, handlerIndex: route.handler))
                state.schemes.insert(route.pattern.scheme)
            }
            tableChanged(&state)
        }
    }

    /// Every endpoint with at least one route.
    var endpoints: [any PluginEndpoint] {
        state.withLock { state in
            var seen = Set<ObjectIdentifier>()
            return state.table.routes.map(\.value.endpoint).filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
    }

    /// Swaps the plug-in loaded from `path` for a new endpoint in one step,
    /// so no request finds the route missing in between. Returns the old
    /// endpoint, to retire once its requests are answered.
    @discardableResult
    func replace(path: String, with endpoint: any PluginEndpoint, info: PluginInfo,
                 routes: [(pattern: RoutePattern, handler: Int)]) -> (any PluginEndpoint)? {
        state.withLock { state in
            let old = Self.removeLocked(path: path, from: &state)
            for route in routes {
                state.table.insert(route.pattern, value: RouteTarget(endpoint: endpoint, handlerIndex: route.handler))
            }
            state.statuses.append(PluginStatus(path: info.path, info: info, routes: routes.map(\.pattern), error: nil))
            state.schemes = RoutedSchemes(state.table.routes.map(\.pattern.scheme))
            tableChanged(&state)
            return old
        }
    }

    /// Forgets the plug-in loaded from `path` (and any refusal recorded for
    /// it); returns its endpoint, if it had one.
    @discardableResult
    func remove(path: String) -> (any PluginEndpoint)? {
        state.withLock { state in
            let old = Self.removeLocked(path: path, from: &state)
            state.schemes = RoutedSchemes(state.table.routes.map(\.pattern.scheme))
            tableChanged(&state)
            return old
        }
    }

    private static func removeLocked(path: String, from state: inout State) -> (any PluginEndpoint)? {
        let old = state.table.routes.first { ($0.value.endpoint as? PathIdentified)?.path == path }?.value.endpoint
        if let old {
            state.table.removeAll { $0.endpoint === old }
        }
        state.statuses.removeAll { $0.path == path }
        return old
    }

    /// Records a file that was refused.
    func refuse(_ error: PluginLoadError, info: PluginInfo? = nil) {
        state.withLock {
            $0.statuses.removeAll { $0.path == error.path }
            $0.statuses.append(PluginStatus(path: error.path, info: info, routes: [], error: error))
        }
    }
}

/// Endpoints that know which file they run, so the registry can find them
/// when that file changes.
protocol PathIdentified {
    var path: String { get }
}
