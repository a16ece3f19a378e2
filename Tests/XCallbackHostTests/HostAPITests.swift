import CXCallback
import Dispatch
import Foundation
import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

/// The host API table as a C plug-in sees it: registration statuses,
/// request accessors, completion functions and exactly-once completion.
@Suite("Host API table", .ownThreads)
struct HostAPITests {
    @Test func tableCarriesTheHeaderVersionAndSize() throws {
        let table = HostAPI.table.pointee
        #expect(table.abi_major == UInt16(XCALLBACK_ABI_MAJOR))
        #expect(table.abi_minor == UInt16(XCALLBACK_ABI_MINOR))
        #expect(Int(table.api_size) == MemoryLayout<xcallback_host_api>.size)

        // What a C plug-in read during registration, and its own sizeof.
        let path = try ABITestPlugin.path()
        _ = try ABITestPlugin.load()
        #expect(try loadedSymbol("abitest_api_major", in: path, as: CIntFunction.self)() == XCALLBACK_ABI_MAJOR)
        #expect(try loadedSymbol("abitest_api_minor", in: path, as: CIntFunction.self)() == XCALLBACK_ABI_MINOR)
        let seen = try loadedSymbol("abitest_api_size", in: path, as: CIntFunction.self)()
        let cSize = try loadedSymbol("abitest_header_api_size", in: path, as: CIntFunction.self)()
        #expect(Int(seen) == MemoryLayout<xcallback_host_api>.size)
        #expect(seen == cSize)
    }

    @Test func registrationStatuses() throws {
        let abitest = try ABITestPlugin.load()
        let status = try loadedSymbol("abitest_status", in: ABITestPlugin.path(), as: CIntOfIntFunction.self)
        let seen = (0..<Int32(ABITestPlugin.expectedStatuses.count)).map { status($0) }
        // OK, then NULL handler / NULL plug-in / NULL scheme (INVALID_ARGUMENT),
        // unparsable pattern (BAD_PATTERN), NULL pattern, ":id" action, unbalanced group...
        #expect(seen == ABITestPlugin.expectedStatuses)
        #expect(status(Int32(ABITestPlugin.expectedStatuses.count)) == 99, "no registration beyond those expected")
        // Only the accepted routes exist, in registration order.
        #expect(abitest.routeTexts == [
            "abi://x-callback-url/echo", "abi://ctl/act", "abi://items/:id", "abi://files/*",
            "abi://x-callback-url/error-null-domain", "abi://x-callback-url/error-domain",
            "abi://x-callback-url/decline", "abi://x-callback-url/cancel",
            "abi://x-callback-url/success-null", "abi://x-callback-url/copied", "abi://x-callback-url/later",
        ])
        #expect(abitest.plugin.info.version == "2.5.1")
        #expect(abitest.plugin.info.summary == "Exercises the host API table")
    }

    @Test func registeringOutsideRegistrationIsRefused() throws {
        _ = try ABITestPlugin.load()
        let late = try loadedSymbol("abitest_register_late", in: ABITestPlugin.path(), as: CIntFunction.self)
        #expect(late() == Int32(XCALLBACK_ERR_NOT_REGISTERING))
        #expect(try ABITestPlugin.load().plugin.registrations.count == 11)
    }

    @Test func requestAccessorsSeeTheDecodedRequest() throws {
        let abitest = try ABITestPlugin.load()
        let line = "abi://x-callback-url/echo?a=1&b=x%01y&a=2&empty=&z=Zo%C3%AB+1&x-source=Tester&x-success=foo%3A%2F%2Fbar"
        // b's value gets a NUL byte, which the URL parser would refuse as %00.
        var parameters = Array(try RequestURL(parsing: line).parameters)
        parameters[1].value = "x\0y"
        let answer = try abitest.call(line, parameters: parameters)
        #expect(answer.kind == .success, "\(answer)")
        #expect(answer.value("url") == line)
        #expect(answer.value("scheme") == "abi")
        #expect(answer.value("source") == "Tester")
        // x-callback parameters are not action parameters.
        #expect(answer.value("count") == "5")
        #expect(answer.value("p0") == "a=1#1")
        #expect(answer.value("p1") == "b=x\\0y#3")
        #expect(answer.value("p2") == "a=2#1")
        #expect(answer.value("p3") == "empty=#0")
        #expect(answer.value("p4") == "z=Zoë+1#6")
        #expect(answer.value("x_source_param") == "(null)")
        #expect(answer.value("past_end") == "null")
        #expect(answer.value("first_a") == "1#1")
        #expect(answer.value("missing") == "(null)")
        #expect(answer.value("empty") == "[#0")
        #expect(answer.value("arg_id") == "(null)")
        #expect(answer.value("arg_star") == "(null)")
        #expect(answer.value("arg_null_name") == "null")
        #expect(answer.value("null_request") == "null")
        #expect(answer.value("user_data") == "marker")
    }

    /// xcallback.h: a value never holds a NUL byte; a line with `%00` is
    /// InvalidURL before any plug-in sees it, so values are plain C strings.
    @Test func aPercentEncodedNulNeverReachesAPlugin() throws {
        let abitest = try ABITestPlugin.load()
        #expect(throws: (any Error).self) {
            _ = try abitest.call("abi://x-callback-url/echo?b=x%00y")
        }
    }

    @Test func schemeIsLowercasedAndSourceAbsentIsNull() throws {
        let answer = try ABITestPlugin.load().call("ABI://x-callback-url/echo")
        #expect(answer.value("scheme") == "abi")
        #expect(answer.value("source") == "(null)")
        #expect(answer.value("count") == "0")
        #expect(answer.value("first_a") == "(null)")
        #expect(answer.value("empty") == "(null)")
    }

    @Test func routeArgumentsReachTheHandler() throws {
        let abitest = try ABITestPlugin.load()
        let item = try abitest.call("abi://items/42?a=x")
        #expect(item.value("arg_id") == "42")
        #expect(item.value("arg_star") == "(null)")
        #expect(item.value("first_a") == "x#1")
        let files = try abitest.call("abi://files/a/b/c.txt")
        #expect(files.value("arg_star") == "a/b/c.txt")
        #expect(files.value("arg_id") == "(null)")
        let controller = try abitest.call("abi://ctl/act")
        #expect(controller.value("user_data") == "marker")
        #expect(controller.value("url") == "abi://ctl/act")
    }

    @Test func logLinesAreTaggedWithThePlugin() throws {
        _ = try ABITestPlugin.load().call("abi://x-callback-url/echo")
        let log = LoadedPlugins.log
        #expect(log.contains("info [abitest] abitest registered"))
        #expect(log.contains("debug [abitest] echo: debug"))
        #expect(log.contains("info [abitest] echo: info"))
        #expect(log.contains("warning [abitest] echo: warning"))
        #expect(log.contains("error [abitest] echo: error"))
        // A NULL handle or message is ignored, not a crash.
        #expect(!log.contains("no plug-in handle"))
    }

    @Test func errorWithNullDomainUsesThePluginName() throws {
        // The plug-in first checks that a NULL code is refused with INVALID_ARGUMENT.
        let answer = try ABITestPlugin.load().call("abi://x-callback-url/error-null-domain")
        #expect(answer.outcome == .error(code: "Oops", message: "", domain: "abitest"), "\(answer)")
    }

    @Test func errorWithExplicitDomain() throws {
        let answer = try ABITestPlugin.load().call("abi://x-callback-url/error-domain")
        #expect(answer.outcome == .error(code: "Custom", message: "a message", domain: "elsewhere"))
    }

    @Test func declineCancelAndEmptySuccess() throws {
        let abitest = try ABITestPlugin.load()
        #expect(try abitest.call("abi://x-callback-url/decline").isDeclined)
        #expect(try abitest.call("abi://x-callback-url/cancel").outcome == .cancel)
        #expect(try abitest.call("abi://x-callback-url/success-null").outcome == .success([]))
    }

    @Test func outputParametersAreCopiedBeforeReplySuccessReturns() throws {
        let answer = try ABITestPlugin.load().call("abi://x-callback-url/copied")
        #expect(answer.outcome == .success([QueryParameter(name: "key", value: "value")]))
    }

    @Test func lateCompletionWorksUntilExpiredThenIsRefused() throws {
        let abitest = try ABITestPlugin.load()
        let completeSaved = try loadedSymbol("abitest_complete_saved", in: ABITestPlugin.path(), as: CIntFunction.self)

        // One test drives `later` at a time: the plug-in keeps one saved reply.
        try LaterLock.shared.withLock { _ in
            // Completed later, from this (another) thread: delivered once.
            let (first, _) = try abitest.start("abi://x-callback-url/later")
            #expect(first.results.isEmpty)
            #expect(completeSaved() == Int32(XCALLBACK_OK))
            #expect(first.wait(for: 1, timeout: 5))
            #expect(first.results == [.outcome(.success([QueryParameter(name: "late", value: "yes")]))])
            #expect(completeSaved() == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
            #expect(first.results.count == 1)

            // Abandoned (Timeout) first: the late completion is refused and nothing arrives.
            let (second, call) = try abitest.start("abi://x-callback-url/later")
            call.abandon()
            #expect(completeSaved() == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
            #expect(completeSaved() == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
            #expect(second.results.isEmpty)
        }
    }
}

/// Serialises the tests that use the plug-in's single saved reply.
enum LaterLock {
    static let shared = Lock(())
}

/// `ReplyTable`, the exactly-once guard behind every completion function.
@Suite("Reply tokens", .ownThreads)
struct ReplyTableTests {
    private func request() -> NativeRequest {
        NativeRequest(RequestFields(url: "t://x-callback-url/t", scheme: "t", source: nil, parameters: [], arguments: []), route: "t://x-callback-url/t")
    }

    @Test func secondCompletionThroughTheABIIsRefusedAndDeliversNothing() {
        let recorder = Recorder()
        let reply = HostAPI.replies.open(request: request(), plugin: "p") { recorder.record($0) }
        let api = HostAPI.table.pointee
        let name = strdup("k")!, value = strdup("v")!
        defer { free(name); free(value) }
        let params = [xcallback_param(name: UnsafePointer(name), value: UnsafePointer(value))]
        #expect(api.reply_success(reply, params, 1) == Int32(XCALLBACK_OK))
        #expect(api.reply_success(reply, params, 1) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(api.reply_error(reply, "E", "m", nil) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(api.reply_cancel(reply) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(api.reply_decline(reply) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(recorder.results == [.outcome(.success([QueryParameter(name: "k", value: "v")]))])
    }

    @Test func madeUpTokensAreRefused() {
        let api = HostAPI.table.pointee
        for token: UInt64 in [0xFFFF_FFFF_FFFF_FFFF, 0x7777_0000_0000_0001, UInt64(UInt32.max)] {
            #expect(api.reply_cancel(xcallback_reply(token: token)) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        }
        let table = ReplyTable()
        #expect(table.complete(xcallback_reply(token: 0)) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(!table.expire(xcallback_reply(token: 0)))
    }

    @Test("a slot whose generation would wrap is retired: no token is handed out twice")
    func generationWrap() {
        let table = ReplyTable(firstGeneration: UInt32.max - 1)
        var tokens: Set<UInt64> = []
        for _ in 0..<4 {
            let reply = table.open(request: request(), plugin: "one") { _ in }
            #expect(tokens.insert(reply.token).inserted, "token \(reply.token) handed out twice")
            #expect(table.expire(reply))
        }
        // Slot 0 served generations max-1 and max, then slot 1 did the same.
        #expect(tokens.map { $0 & 0xFFFF_FFFF }.sorted() == [0, 0, 1, 1])
        #expect(table.complete(xcallback_reply(token: tokens.min()!)) { _, _ in .declined } == .afterTimeout(plugin: "one"))
    }

    @Test func completeExpireAndReuse() {
        let table = ReplyTable()
        let recorder = Recorder()
        let first = table.open(request: request(), plugin: "one") { recorder.record($0) }
        #expect(table.pendingCount == 1)
        #expect(table.plugin(of: first) == "one")
        #expect(table.complete(first) { plugin, _ in .outcome(.error(code: "C", message: "", domain: plugin)) } == nil)
        #expect(recorder.results == [.outcome(.error(code: "C", message: "", domain: "one"))])
        #expect(table.complete(first) { _, _ in .declined } == .alreadyCompleted)
        #expect(!table.expire(first))
        #expect(table.pendingCount == 0)

        // The slot is reused with a new generation: the old token stays dead.
        let second = table.open(request: request(), plugin: "two") { recorder.record($0) }
        #expect(second.token != first.token)
        #expect(second.token & 0xFFFF_FFFF == first.token & 0xFFFF_FFFF)
        #expect(table.complete(first) { _, _ in .declined } == .alreadyCompleted)
        #expect(table.plugin(of: second) == "two")

        // Expired: the late completion is refused as after a timeout, once.
        #expect(table.expire(second))
        #expect(!table.expire(second))
        #expect(table.pendingCount == 0)
        #expect(table.complete(second) { _, _ in .outcome(.cancel) } == .afterTimeout(plugin: "two"))
        #expect(table.complete(second) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(recorder.results.count == 1)
    }

    @Test func racingCompletionsDeliverExactlyOnce() {
        let recorder = Recorder()
        let replies = (0..<64).map { _ in HostAPI.replies.open(request: request(), plugin: "race") { recorder.record($0) } }
        let accepted = Lock(0)
        for reply in replies {
            DispatchQueue.concurrentPerform(iterations: 8) { attempt in
                let status = attempt.isMultiple(of: 2)
                    ? HostAPI.table.pointee.reply_cancel(reply)
                    : HostAPI.table.pointee.reply_success(reply, nil, 0)
                if status == Int32(XCALLBACK_OK) { accepted.withLock { $0 += 1 } }
            }
        }
        #expect(accepted.withLock { $0 } == 64)
        #expect(recorder.results.count == 64)
    }
}
