import CXCallback
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSystem

/// The route table as the fast lane reads it: literal routes by their
/// bytes, and for each route the native handler to call when the plug-in
/// runs in this process. Immutable; the registry builds a new one after a
/// change, and a lane swaps its copy when the registry's generation moves.
final class RouteSnapshot: Sendable {
    /// A route whose handler a fast lane (an input stream's, or a worker's,
    /// `WorkerLane`) may call directly. A class, so taking one for a
    /// request is one reference, not one per field.
    final class NativeRoute: @unchecked Sendable {
        // @unchecked: the plug-in promises (xcallback.h) that its handlers
        // may be called on any thread.
        let function: xcallback_handler
        let userData: UnsafeMutableRawPointer?
        let plugin: String
        /// Its counts (`run --metrics`; nil when off), and the same
        /// unretained, for the request's end (`LaneRequest`).
        let counts: PluginMetrics?
        let unretainedCounts: Unmanaged<PluginMetrics>?
        let mark: PluginMark
        /// The pattern as registered (`request_route`), and its bytes.
        let pattern: String
        let patternBytes: [UInt8]
        /// The plug-in and pattern as the reply table numbers them, for
        /// log lines about a call's reply (`ReplyTable.callName`).
        let callName: UInt32

        init(function: xcallback_handler, userData: UnsafeMutableRawPointer?, plugin: String, counts: PluginMetrics?,
             mark: PluginMark, pattern: String) {
            self.function = function
            self.userData = userData
            self.plugin = plugin
            self.counts = counts
            unretainedCounts = counts.map(Unmanaged.passUnretained)
            self.mark = mark
            self.pattern = pattern
            patternBytes = Array(pattern.utf8)
            callName = HostAPI.replies.callName(plugin: plugin, route: pattern)
        }
    }

    /// A route whose plug-in runs in a worker: the lane sends its requests
    /// straight from their lines (`Dispatcher.submitToWorker`).
    final class WorkerRoute: Sendable {
        let endpoint: WorkerEndpoint
        let handler: Int
        /// The plug-in's slot in each input's shares (`ShareSlots`).
        let shareSlot: Int

        init(endpoint: WorkerEndpoint, handler: Int, shareSlot: Int) {
            self.endpoint = endpoint
            self.handler = handler
            self.shareSlot = shareSlot
        }
    }

    let literals: LiteralRouteIndex
    /// By route index; nil for routes the lane leaves to the general path
    /// (workers, bound functions, the built-in await).
    let native: [NativeRoute?]
    /// The same, unretained, for a lane to borrow while it holds the
    /// snapshot: taken from `native`, a route was retained and released.
    let unretainedNative: [Unmanaged<NativeRoute>?]
    /// By route index; nil for routes whose plug-in runs in this process.
    let workers: [WorkerRoute?]
    /// Whether any route can take the lane.
    let hasFastRoutes: Bool
    /// The schemes routes use: a callback to one is the next hop of a chain.
    private let schemes: RoutedSchemes

    init(table: RouteTable<RouteTarget>) {
        literals = table.literalIndex()
        var native: [NativeRoute?] = []
        var workers: [WorkerRoute?] = []
        var schemes = RoutedSchemes([])
        for (pattern, target) in table.routes {
            schemes.insert(pattern.scheme)
            workers.append((target.endpoint as? WorkerEndpoint).map {
                WorkerRoute(endpoint: $0, handler: target.handlerIndex, shareSlot: target.shareSlot)
            })
            guard let endpoint = target.endpoint as? InProcessEndpoint,
                  case .native(let handler) = endpoint.plugin.registrations[target.handlerIndex].handler
            else {
                native.append(nil)
                continue
            }
            native.append(NativeRoute(function: handler.function, userData: handler.userData, plugin: endpoint.pluginName,
                                      counts: endpoint.counts, mark: endpoint.plugin.mark, pattern: pattern.text))
        }
        self.native = native
        unretainedNative = native.map { $0.map(Unmanaged.passUnretained) }
        self.workers = workers
        self.schemes = schemes
        hasFastRoutes = native.contains { $0 != nil } || workers.contains { $0 != nil }
    }

    /// Whether the URL in `bytes` has the scheme of one of the routes.
    func routesScheme(of bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        schemes.contains(schemeOf: bytes)
    }
}
