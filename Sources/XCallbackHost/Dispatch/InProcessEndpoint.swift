import CXCallback
import XCallbackBridge
import XCallbackMetrics
import XCallbackURL

/// Runs a plug-in loaded into the host process (`--isolation none`): the
/// lowest latency, and no protection: a crash in the plug-in is a crash of
/// the host.
final class InProcessEndpoint: PluginEndpoint, PathIdentified {
    let plugin: LoadedPlugin
    let counts: PluginMetrics?

    init(plugin: LoadedPlugin, counts: PluginMetrics? = nil) {
        self.plugin = plugin
        self.counts = counts
    }

    var pluginName: String { plugin.name }
    var path: String { plugin.info.path }

    func invoke(handler index: Int, request: RequestFields, call: HandlerCall) {
        switch plugin.registrations[index].handler {
        case .native(let handler):
            let native = NativeRequest(request, route: plugin.registrations[index].pattern.text)
            let reply = HostAPI.replies.open(request: native, plugin: plugin.name, deliver: call.deliver)
            call.whenAbandoned { HostAPI.replies.expire(reply) }
            plugin.mark.whileRunning { handler.function(native.opaque, reply, handler.userData) }
        case .bound(let function):
            // Completes before it returns: no reply token, nothing to abandon.
            call.deliver(.outcome(plugin.mark.whileRunning { function.call(request) }))
        case .hosted(let handler):
            // Answers before it returns, or not at all when its time budget
            // ran out: the dispatcher's deadline answers `Timeout` then.
            let route = plugin.registrations[index].pattern.text
            if let result = plugin.mark.whileRunning({ handler.call(request, route: route) }) {
                call.deliver(result)
            }
        }
    }
}
