/// Where a route leads: the endpoint that runs the plug-in, and which of
/// its registered handlers (by registration index) to call.
struct RouteTarget: Sendable {
    let endpoint: any PluginEndpoint
    let handlerIndex: Int
    /// The plug-in's slot in each input's shares (`ShareSlots`), found once
    /// here rather than for each request.
    let shareSlot: Int

    init(endpoint: any PluginEndpoint, handlerIndex: Int) {
        self.endpoint = endpoint
        self.handlerIndex = handlerIndex
        shareSlot = ShareSlots.slot(of: endpoint.pluginName)
    }

    var pluginName: String { endpoint.pluginName }
}
