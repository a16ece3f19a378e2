import CXCallback
import Dispatch
import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
@testable import XCallbackPluginKit
import XCallbackSystem
import XCallbackURL

/// The Swift kit's `Request` reads the host's request in place while its
/// handler runs; one the handler keeps must survive the host reusing that
/// memory. Driven through the real host API table.
@Suite("Swift kit requests")
struct KitRequestTests {
    private func hostRequest() -> NativeRequest {
        NativeRequest(RequestFields(
            url: "calc://x-callback-url/add?lhs=1&rhs=2.5&text=caf%C3%A9", scheme: "calc", source: "Shortcuts",
            parameters: [QueryParameter("lhs", "1"), QueryParameter("rhs", "2.5"), QueryParameter("text", "café")],
            arguments: [], id: 42, attempt: 3), route: "calc://x-callback-url/add")
    }

    @Test("typed parameters and fields read while borrowed")
    func borrowedReads() throws {
        let native = hostRequest()
        let request = Request(borrowing: native.opaque, api: HostAPI.table, argumentNames: [])
        #expect(try request.parameter("lhs", as: Int.self) == 1)
        #expect(try request.parameter("rhs", as: Double.self) == 2.5)
        #expect(try request.optionalParameter("missing", as: Int.self) == nil)
        #expect(throws: ParameterError.self) { try request.parameter("text", as: Double.self) }
        #expect(request.url == "calc://x-callback-url/add?lhs=1&rhs=2.5&text=caf%C3%A9")
        #expect(request.scheme == "calc" && request.source == "Shortcuts")
        #expect(request.route == "calc://x-callback-url/add" && request.id == 42 && request.attempt == 3)
        #expect(request.parameters.map(\.name) == ["lhs", "rhs", "text"])
        request.endBorrow()
        withExtendedLifetime(native) {}
    }

    @Test("decimals read from the host's bytes are what Double(parameterValue:) gives")
    func decimalsFromTheHostsBytes() throws {
        let values = ["0.1", "-2.5e3", "007", "1e30", "123456789012345678901", "1e-400", "abc", "", "1e999", "+.5", "%"]
        let native = NativeRequest(RequestFields(
            url: "calc://x-callback-url/values", scheme: "calc", source: nil,
            parameters: values.enumerated().map { QueryParameter("v\($0.offset)", $0.element) },
            arguments: [], id: 1, attempt: 1), route: "calc://x-callback-url/values")
        let request = Request(borrowing: native.opaque, api: HostAPI.table, argumentNames: [])
        for (index, text) in values.enumerated() {
            let expected = Double(parameterValue: text)
            #expect((try? request.parameter("v\(index)", as: Double.self)) == expected, "\(text)")
            #expect((try? request.optionalParameter("v\(index)", as: Double.self)) == expected, "\(text)")
        }
        #expect(throws: ParameterError.self) { try request.parameter("v6", as: Double.self) }
        #expect(throws: ParameterError.self) { try request.parameter("missing", as: Double.self) }
        #expect(try request.optionalParameter("missing", as: Double.self) == nil)
        request.endBorrow()
        withExtendedLifetime(native) {}
    }

    @Test("a request the handler keeps is copied out when the handler returns")
    func keptRequestOutlivesTheHost() throws {
        var native: NativeRequest? = hostRequest()
        let request = Request(borrowing: native!.opaque, api: HostAPI.table, argumentNames: [])
        let kept = request
        request.endBorrow()
        native = nil  // the host's memory is gone
        #expect(kept.url == "calc://x-callback-url/add?lhs=1&rhs=2.5&text=caf%C3%A9")
        #expect(try kept.parameter("text", as: String.self) == "café")
        #expect(kept.source == "Shortcuts" && kept.route == "calc://x-callback-url/add" && kept.id == 42)
        #expect(kept.attempt == 3)
    }

    @Test("a host table that ends before request_attempt reads attempt 1, and id as before")
    func attemptFromAnOlderTable() {
        let native = hostRequest()
        // The 1.2 table as it was before request_attempt was appended.
        var older = HostAPI.table.pointee
        older.api_size = UInt32(MemoryLayout<xcallback_host_api>.offset(of: \.request_attempt)!)
        older.request_attempt = nil
        withUnsafePointer(to: &older) { table in
            let request = Request(borrowing: native.opaque, api: table, argumentNames: [])
            #expect(request.attempt == 1 && request.id == 42)
            request.endBorrow()
        }
        withExtendedLifetime(native) {}
    }

    @Test("a changed copy keeps its change; the original is untouched")
    func valueSemantics() throws {
        let native = hostRequest()
        let request = Request(borrowing: native.opaque, api: HostAPI.table, argumentNames: [])
        var changed = request
        changed.source = "Tests"
        #expect(changed.source == "Tests" && request.source == "Shortcuts")
        #expect(try changed.parameter("lhs", as: Int.self) == 1)
        withExtendedLifetime(native) {}
    }

    @Test("an async route answers from its task, reading the request after the call returned")
    func asyncRoute() async throws {
        var routes = Routes()
        routes.action("calc", "add", async: { request in
            // The call that started this task has returned by the time it
            // reads: the kit copied the request out of the host's memory.
            try await Task.sleep(for: .milliseconds(20))
            let sum = try request.parameter("lhs", as: Double.self) + request.parameter("rhs", as: Double.self)
            return .success(["sum": String(sum), "text": try request.parameter("text", as: String.self)])
        })
        let box = HandlerBox(api: HostAPI.table, route: routes.routes[0])
        let native = hostRequest()
        let delivered = Lock<HandlerResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        let reply = HostAPI.replies.open(request: native, plugin: "kit", deliver: { result in
            delivered.withLock { $0 = result }
            done.signal()
        })
        box.call(native.opaque, reply: reply)
        // The task runs on Swift Testing's pool, which the suite's
        // CPU-bound tests (the decimal differential ones take 25 s beside
        // hogs) can hold: a generous bound, not a tight one.
        let arrived = await awaitOwnThread(within: 100) { done.wait(timeout: .now() + 90) == .success }
        #expect(arrived == true)
        #expect(delivered.withLock { $0 } == .outcome(.success([QueryParameter("sum", "3.5"), QueryParameter("text", "café")])))
    }
}

/// A synchronous route's request storage moves through `HandlerBox`'s spare
/// slot (2906cfd): one the handler keeps must keep its own values after the
/// call returned and the host's memory is gone, and later calls, which reuse
/// the spare storage, must never read through or into the kept one.
@Suite("Swift kit: a kept request and the spare storage")
struct KitKeptRequestTests {
    private static func native(_ lhs: Int, id: UInt64) -> NativeRequest {
        NativeRequest(RequestFields(
            url: "calc://x-callback-url/add?lhs=\(lhs)&rhs=0.5", scheme: "calc", source: nil,
            parameters: [QueryParameter("lhs", "\(lhs)"), QueryParameter("rhs", "0.5")],
            arguments: [], id: id, attempt: 1), route: "calc://x-callback-url/add")
    }

    @Test("a request kept by its handler reads its own values; later calls read theirs")
    func keptRequestAndSpare() throws {
        let kept = Lock<[Request]>([])
        var routes = Routes()
        routes.action("calc", "add") { request in
            let lhs = try request.parameter("lhs", as: Int.self)
            // Every third call keeps its request, as a handler that hands it
            // to a task or a global would.
            if lhs % 3 == 0 { kept.withLock { $0.append(request) } }
            return .success(["result": String(lhs), "id": String(request.id)])
        }
        let box = HandlerBox(api: HostAPI.table, route: routes.routes[0])
        for lhs in 0..<30 {
            var native: NativeRequest? = Self.native(lhs, id: UInt64(1000 + lhs))
            let delivered = Lock<HandlerResult?>(nil)
            let reply = HostAPI.replies.open(request: native!, plugin: "kit", deliver: { result in
                delivered.withLock { $0 = result }
            })
            box.call(native!.opaque, reply: reply)
            #expect(delivered.withLock { $0 } == .outcome(.success([QueryParameter("result", "\(lhs)"),
                                                                    QueryParameter("id", "\(1000 + lhs)")])))
            native = nil  // the host reuses (here: frees) its memory
        }
        let requests = kept.withLock { $0 }
        #expect(requests.count == 10)
        for (index, request) in requests.enumerated() {
            #expect(try request.parameter("lhs", as: Int.self) == 3 * index)
            #expect(request.id == UInt64(1000 + 3 * index))
            #expect(request.url == "calc://x-callback-url/add?lhs=\(3 * index)&rhs=0.5")
        }
    }
}
