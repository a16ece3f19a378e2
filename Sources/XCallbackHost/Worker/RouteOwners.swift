import XCallbackRouting
import XCallbackURL

/// The routes other plug-ins own, as a worker learns them in its hello
/// frame: what lets a worker's registration refuse a conflicting route with
/// `XCALLBACK_ERR_ROUTE_CONFLICT`, as an in-process load does, so a plug-in
/// behaves the same in either isolation mode.
struct RouteOwners: Sendable {
    private let table: RouteTable<String>

    /// `taken`: pattern text (name) and owning plug-in (value).
    init(_ taken: [QueryParameter]) {
        var table = RouteTable<String>()
        for item in taken {
            guard let pattern = try? RoutePattern(item.name) else { continue }
            _ = table.insert(pattern, value: item.value)
        }
        self.table = table
    }

    /// The plug-in owning a route of the same shape as `pattern`, if any.
    func owner(ofSameShapeAs pattern: RoutePattern) -> String? {
        for existing in table.sameShapeRoutes(as: pattern) {
            if let owner = table.routes.first(where: { $0.pattern == existing })?.value { return owner }
        }
        return nil
    }
}
