// Route lookup: XCallbackRouting.RouteTable beside RoutingKit.TrieRouter.
//
//   RouteBench [sizes] [lookups] [rounds]      e.g. RouteBench 10,1000,10000 1000000 5
//
// For each size N it registers the same N routes in both routers, draws
// `lookups` requests (seeded) that each hit one of them, and times a pass of
// lookups through each router, alternating, best of `rounds`. Prints one JSON
// object per size on stdout.
//
// The routes mix the three forms the host routes (SPEC section 1), spread
// over N/50 schemes (at least one):
//   half       scheme://x-callback-url/act<i>        x-callback-url action
//   a quarter  scheme://ctl<i % 7>/act<i>            controller/action
//   a quarter  scheme://items<i % 5>/:id/part<i>     pattern with an argument
//
// Both routers get the request already split into segments (the host's
// parser splits the URL anyway): RouteTable takes scheme, host and path;
// TrieRouter takes [scheme, host] + path, built before timing. Each lookup
// binds the route's arguments: RouteTable.firstMatch returns them in its
// RouteMatch; TrieRouter fills a Parameters value (made per lookup, as a
// server makes one per request, with a logger made once).

import Foundation
import Logging
import RoutingKit
import XCallbackRouting

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct Route {
    var scheme: String
    /// Segments after the scheme: host first; ":id" is an argument.
    var segments: [String]
    var text: String { scheme + "://" + segments.joined(separator: "/") }
}

struct Request {
    var scheme: String
    var host: String
    var path: [String]
    /// [scheme, host] + path, for TrieRouter.
    var all: [String]
    var expected: Int
}

func makeRoutes(count: Int) -> [Route] {
    let schemes = max(1, count / 50)
    return (0..<count).map { index in
        let scheme = "app\(index % schemes)"
        switch index % 4 {
        case 0, 1: return Route(scheme: scheme, segments: ["x-callback-url", "act\(index)"])
        case 2: return Route(scheme: scheme, segments: ["ctl\(index % 7)", "act\(index)"])
        default: return Route(scheme: scheme, segments: ["items\(index % 5)", ":id", "part\(index)"])
        }
    }
}

func makeRequests(routes: [Route], count: Int, seed: UInt64) -> [Request] {
    var rng = SeededGenerator(state: seed)
    return (0..<count).map { _ in
        let index = Int.random(in: 0..<routes.count, using: &rng)
        let route = routes[index]
        let segments = route.segments.map { $0 == ":id" ? String(UInt32.random(in: 0...99_999, using: &rng)) : $0 }
        return Request(scheme: route.scheme, host: segments[0], path: Array(segments.dropFirst()),
                       all: [route.scheme] + segments, expected: index)
    }
}

@inline(never)
func lookUpOurs(_ table: RouteTable<Int>, _ requests: [Request]) -> Int {
    var checksum = 0
    for request in requests {
        if let match = table.firstMatch(scheme: request.scheme, host: request.host, path: request.path) {
            checksum &+= match.value &+ match.arguments.count
        }
    }
    return checksum
}

@inline(never)
func lookUpOursIterator(_ table: RouteTable<Int>, _ requests: [Request]) -> Int {
    var checksum = 0
    for request in requests {
        var matches = table.matches(scheme: request.scheme, host: request.host, path: request.path)
        if let match = matches.next() {
            checksum &+= match.value &+ match.arguments.count
        }
    }
    return checksum
}

@inline(never)
func lookUpRoutingKit(_ router: TrieRouter<Int>, _ requests: [Request], logger: Logger) -> Int {
    var checksum = 0
    for request in requests {
        var parameters = Parameters(logger)
        if let value = router.route(path: request.all, parameters: &parameters) {
            checksum &+= value &+ parameters.allNames.count
        }
    }
    return checksum
}

func seconds(_ body: () -> Int) -> (Double, Int) {
    let clock = ContinuousClock()
    var checksum = 0
    let elapsed = clock.measure { checksum = body() }
    return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, checksum)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let sizes = (arguments.first ?? "10,1000,10000").split(separator: ",").compactMap { Int($0) }
let lookups = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
let logger = Logger(label: "routebench")

for size in sizes {
    let routes = makeRoutes(count: size)

    var table = RouteTable<Int>()
    let (buildOurs, _) = seconds {
        for (index, route) in routes.enumerated() {
            table.insert(try! RoutePattern(route.text), value: index)
        }
        return table.count
    }
    let router = TrieRouter(Int.self, logger: logger)
    let (buildKit, _) = seconds {
        for (index, route) in routes.enumerated() {
            let path: [PathComponent] = [.constant(route.scheme)]
                + route.segments.map { $0 == ":id" ? .parameter("id") : .constant($0) }
            router.register(index, at: path)
        }
        return 0
    }

    let requests = makeRequests(routes: routes, count: lookups, seed: 0x5EED &+ UInt64(size))
    let expected = requests.reduce(0) { $0 &+ $1.expected &+ ($1.path.count == 2 ? 1 : 0) }
    // Warm up, and check that both routers find the route each request was made from.
    let warm = Array(requests.prefix(10_000))
    let warmExpected = warm.reduce(0) { $0 &+ $1.expected &+ ($1.path.count == 2 ? 1 : 0) }
    precondition(lookUpOurs(table, warm) == warmExpected, "RouteTable answered wrongly")
    precondition(lookUpOursIterator(table, warm) == warmExpected, "RouteTable.matches answered wrongly")
    precondition(lookUpRoutingKit(router, warm, logger: logger) == warmExpected, "TrieRouter answered wrongly")

    var best = [Double](repeating: .infinity, count: 3)
    var checksums = [0, 0, 0]
    for _ in 0..<rounds {
        let passes: [() -> Int] = [
            { lookUpOurs(table, requests) },
            { lookUpOursIterator(table, requests) },
            { lookUpRoutingKit(router, requests, logger: logger) },
        ]
        for (index, pass) in passes.enumerated() {
            let (time, checksum) = seconds(pass)
            best[index] = min(best[index], time)
            checksums[index] = checksum
        }
    }
    let correct = checksums.allSatisfy { $0 == expected }
    let rate = best.map { Double(lookups) / $0 }
    print("{\"routes\":\(size),\"lookups\":\(lookups),\"rounds\":\(rounds),\"correct\":\(correct),"
        + "\"ours_firstMatch_per_s\":\(Int(rate[0])),\"ours_matches_next_per_s\":\(Int(rate[1])),"
        + "\"routingkit_per_s\":\(Int(rate[2])),"
        + "\"ours_build_s\":\(buildOurs),\"routingkit_build_s\":\(buildKit)}")
}
