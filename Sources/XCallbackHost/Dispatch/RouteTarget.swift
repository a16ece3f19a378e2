/// Where a route leads: the endpoint that runs the plug-in, and which of
/// its registered handlers (by registration index) to call.
struct RouteTarget: Sendable {
    let endpoint: any PluginEndpoint
    let handlerIndex: Int

    var pluginName: String { endpoint.pluginName }
}
