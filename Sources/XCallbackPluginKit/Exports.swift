// Plug-ins get the typed values (ParameterValue, QueryParameters…) with
// the kit, without a second import.
@_exported import XCallbackURL
