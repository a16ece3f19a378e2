// The typed parameters live in the plug-in kit's package (bindings/swift),
// which plug-ins use on their own; the host sees them through this module.
@_exported import XCallbackParameters
