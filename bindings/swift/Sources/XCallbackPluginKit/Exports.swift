// Plug-ins get the typed values (ParameterValue, QueryParameter…) with
// the kit, without a second import.
@_exported import XCallbackParameters
