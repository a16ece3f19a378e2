import CXCallback
import Foundation
import Testing
@testable import XCallbackBridge
import XCallbackURL

@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The sample plug-ins (docs/plugin-guide.md), loaded into this process with
/// `PluginLoader` and called through the real ABI with
/// `InProcessEndpoint.invoke(handler:request:call:)`.
@Suite("Sample plug-ins in process", .ownThreads)
struct SamplePluginTests {
    // MARK: Calculator (Swift)

    @Test func calculatorDescribesItselfAndItsRoutes() throws {
        let calculator = try LoadedPlugins.sample("Calculator")
        let info = calculator.plugin.info
        #expect(info.name == "calculator")
        #expect(info.version == "1.0.0")
        #expect(info.abiMajor == 1 && info.abiMinor == Int(XCALLBACK_ABI_MINOR))
        #expect(info.path == Paths.sample("Calculator"))
        #expect(calculator.routeTexts == [
            "calc://x-callback-url/add", "calc://x-callback-url/subtract",
            "calc://x-callback-url/multiply", "calc://x-callback-url/divide",
        ])
    }

    @Test(arguments: [
        ("calc://x-callback-url/add?lhs=2&rhs=4.2", "6.2"),
        ("calc://x-callback-url/subtract?lhs=10&rhs=4", "6"),
        ("calc://x-callback-url/multiply?lhs=1.5&rhs=4", "6"),
        ("calc://x-callback-url/divide?lhs=1&rhs=4", "0.25"),
        ("calc://x-callback-url/add?lhs=-2.5&rhs=0.5", "-2"),
    ])
    func calculatorComputes(line: String, result: String) throws {
        let answer = try LoadedPlugins.sample("Calculator").call(line)
        #expect(answer.kind == .success, "\(answer)")
        #expect(answer.outcome?.parameters == [QueryParameter(name: "result", value: result)])
    }

    @Test func calculatorLabelsTheResultWithText() throws {
        let answer = try LoadedPlugins.sample("Calculator").call("calc://x-callback-url/add?lhs=2&rhs=4.2&text=result")
        #expect(answer.value("result") == "result=6.2")
        // As the SPEC shows it on the wire.
        #expect(answer.outcome?.line(callback: nil) == "success?result=result%3D6.2")
    }

    @Test func calculatorDivisionByZeroIsAnErrorInDomainCalc() throws {
        let answer = try LoadedPlugins.sample("Calculator").call("calc://x-callback-url/divide?lhs=1&rhs=0")
        #expect(answer.kind == .error)
        #expect(answer.errorCode == "DivisionByZero")
        #expect(answer.errorDomain == "calc")
        #expect(answer.errorMessage == "cannot divide by zero")
    }

    @Test(arguments: [
        "calc://x-callback-url/add?lhs=2",
        "calc://x-callback-url/add?rhs=2",
        "calc://x-callback-url/add?lhs=two&rhs=2",
        "calc://x-callback-url/divide?lhs=1&rhs=zero",
        "calc://x-callback-url/multiply",
    ])
    func calculatorBadOrMissingOperandIsAParameterError(line: String) throws {
        let answer = try LoadedPlugins.sample("Calculator").call(line)
        #expect(answer.kind == .error, "\(answer)")
        #expect(answer.errorCode == "ParameterError")
        // The kit found it in the plug-in: the plug-in's domain.
        #expect(answer.errorDomain == "calculator")
        #expect(answer.errorMessage?.isEmpty == false)
    }

    // MARK: Pokedex (Swift)

    @Test func pokedexRoutes() throws {
        let pokedex = try LoadedPlugins.sample("Pokedex")
        #expect(pokedex.plugin.name == "pokedex")
        #expect(pokedex.routeTexts == ["pokedex://pokemons/:pokedexID", "pokedex://pokemons"])
    }

    @Test(arguments: [(1, "Bulbasaur"), (4, "Charmander"), (7, "Squirtle"), (25, "Pikachu")])
    func pokedexFindsAPokemonByID(id: Int, name: String) throws {
        let answer = try LoadedPlugins.sample("Pokedex").call("pokedex://pokemons/\(id)")
        #expect(answer.kind == .success, "\(answer)")
        #expect(answer.outcome?.parameters == [QueryParameter(name: "name", value: name)])
    }

    @Test func pokedexUnknownIDIsNotFoundInDomainPokedex() throws {
        let answer = try LoadedPlugins.sample("Pokedex").call("pokedex://pokemons/9999")
        #expect(answer.errorCode == "NotFound")
        #expect(answer.errorDomain == "pokedex")
        #expect(answer.errorMessage?.contains("9999") == true)
    }

    @Test func pokedexNonNumericIDIsAParameterError() throws {
        let answer = try LoadedPlugins.sample("Pokedex").call("pokedex://pokemons/pikachu")
        #expect(answer.errorCode == "ParameterError")
        #expect(answer.errorDomain == "pokedex")
    }

    @Test(arguments: [
        "pokedex://pokemons?type=water&types=ice",
        "pokedex://pokemons?types=water,ice",
        "pokedex://pokemons?types=ice&types=water",
    ])
    func pokedexFiltersByTypeAndTypes(line: String) throws {
        let answer = try LoadedPlugins.sample("Pokedex").call(line)
        #expect(answer.kind == .success, "\(answer)")
        #expect(answer.value("names") == "Dewgong,Cloyster,Lapras")
    }

    @Test func pokedexSingleTypeListsEveryMatch() throws {
        let answer = try LoadedPlugins.sample("Pokedex").call("pokedex://pokemons?type=electric")
        let names = answer.value("names")?.split(separator: ",").map(String.init) ?? []
        #expect(names.first == "Pikachu")
        #expect(names.contains("Raichu") && names.contains("Jolteon"))
        #expect(!names.contains("Squirtle"))
    }

    @Test(arguments: [
        "pokedex://pokemons?type=plasma",
        "pokedex://pokemons?types=water,plasma",
    ])
    func pokedexValueOutsideTheTypesIsAParameterError(line: String) throws {
        let answer = try LoadedPlugins.sample("Pokedex").call(line)
        #expect(answer.kind == .error, "\(answer)")
        #expect(answer.errorCode == "ParameterError")
        #expect(answer.errorDomain == "pokedex")
    }

    // MARK: Alert (C)

    @Test func alertShowEchoesTitleAndMessageAndLogsTheAlert() throws {
        let alert = try LoadedPlugins.sample("Alert")
        #expect(alert.plugin.name == "alert")
        #expect(alert.routeTexts == ["myapp://alert/show"])
        let answer = try alert.call("myapp://alert/show?title=Hi%20there&message=Yo%0Aman")
        #expect(answer.kind == .success, "\(answer)")
        #expect(answer.outcome?.parameters == [
            QueryParameter(name: "title", value: "Hi there"),
            QueryParameter(name: "message", value: "Yo\nman"),
        ])
        // "Shown" through api->log, tagged with the plug-in, on one line.
        #expect(LoadedPlugins.log.contains("[alert] alert: \"Hi there\" Yo\\x0aman"), "\(LoadedPlugins.log.lines)")
    }

    @Test(arguments: [
        ("myapp://alert/show?message=Yo", "missing required parameter 'title'"),
        ("myapp://alert/show?title=Hi", "missing required parameter 'message'"),
    ])
    func alertRefusesAMissingParameter(line: String, message: String) throws {
        let answer = try LoadedPlugins.sample("Alert").call(line)
        #expect(answer.outcome == .error(code: "ParameterError", message: message, domain: "alert"))
    }

    @Test func alertRefusesANulByte() throws {
        // The request parser refuses %00, so the fields are made directly
        // (what the ABI allows: request_parameter_value reports the length).
        let answer = try LoadedPlugins.sample("Alert").call(
            "myapp://alert/show", parameters: [QueryParameter("title", "a\0b"), QueryParameter("message", "Yo")])
        #expect(answer.outcome == .error(code: "ParameterError", message: "parameter 'title' contains a NUL byte", domain: "alert"))
    }

    // MARK: Faulty (C): only the actions that cannot take this process down

    @Test func faultyFail() throws {
        let answer = try LoadedPlugins.sample("Faulty").call("faulty://x-callback-url/fail")
        #expect(answer.outcome == .error(code: "Failed", message: "the faulty plug-in failed on purpose", domain: "faulty"))
    }

    @Test func faultyCancel() throws {
        let answer = try LoadedPlugins.sample("Faulty").call("faulty://x-callback-url/cancel")
        #expect(answer.outcome == .cancel)
    }

    @Test func faultySleepCompletesLaterFromAnotherThread() throws {
        let faulty = try LoadedPlugins.sample("Faulty")
        let started = DispatchTime.now()
        let caller = pthread_self()
        let (recorder, _) = try faulty.start("faulty://x-callback-url/sleep?ms=50")
        #expect(recorder.wait(for: 1, timeout: 5))
        let finished = DispatchTime.now()
        let results = recorder.results
        try #require(results.count == 1)
        #expect(results[0] == .outcome(.success([QueryParameter(name: "slept", value: "50")])))
        // The handler returned at once; the result came from the plug-in's own thread, later.
        #expect(pthread_equal(recorder.threads[0], caller) == 0)
        #expect(finished.uptimeNanoseconds - started.uptimeNanoseconds >= 50_000_000)
    }

    @Test(arguments: ["faulty://x-callback-url/sleep", "faulty://x-callback-url/sleep?ms=-1",
                      "faulty://x-callback-url/sleep?ms=86400001"])
    func faultySleepNeedsAValidMs(line: String) throws {
        let answer = try LoadedPlugins.sample("Faulty").call(line)
        #expect(answer.errorCode == "ParameterError")
        #expect(answer.errorDomain == "faulty")
    }

    @Test func faultyTwiceDeliversOnlyTheFirstCompletion() throws {
        let faulty = try LoadedPlugins.sample("Faulty")
        // Both completions happen inside the handler, before invoke returns.
        let (recorder, _) = try faulty.start("faulty://x-callback-url/twice")
        #expect(recorder.results == [.outcome(.success([QueryParameter(name: "completion", value: "1")]))])
    }

    @Test func faultyNoiseSucceedsWithoutParameters() throws {
        let answer = try LoadedPlugins.sample("Faulty").call("faulty://x-callback-url/noise")
        #expect(answer.outcome == .success([]))
    }

    @Test func faultyNeverDeliversNothingAndAbandoningRetiresIt() throws {
        let faulty = try LoadedPlugins.sample("Faulty")
        let (recorder, call) = try faulty.start("faulty://x-callback-url/never")
        // The handler has returned without completing: nothing may arrive.
        #expect(recorder.results.isEmpty)
        call.abandon()   // what the dispatcher does when it answers Timeout
        call.abandon()   // a second abandon is a no-op
        #expect(recorder.results.isEmpty)
    }

    @Test func faultyNeverThenExpireThenLateCompletionIsRefused() throws {
        let faulty = try LoadedPlugins.sample("Faulty")
        // The same steps as InProcessEndpoint.invoke, keeping the reply token.
        let (index, fields) = try faulty.prepare("faulty://x-callback-url/never")
        let handler = faulty.plugin.registrations[index].handler
        let native = NativeRequest(fields, route: "test://route")
        let recorder = Recorder()
        let reply = HostAPI.replies.open(request: native, plugin: "faulty") { recorder.record($0) }
        handler.function(native.opaque, reply, handler.userData)

        #expect(recorder.results.isEmpty)
        #expect(HostAPI.replies.plugin(of: reply) == "faulty")
        #expect(HostAPI.replies.expire(reply))
        #expect(HostAPI.replies.plugin(of: reply) == nil)

        // The plug-in completes late: refused, nothing delivered.
        let late = HostAPI.table.pointee.reply_success(reply, nil, 0)
        #expect(late == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(HostAPI.table.pointee.reply_cancel(reply) == Int32(XCALLBACK_ERR_ALREADY_COMPLETED))
        #expect(!HostAPI.replies.expire(reply))
        #expect(recorder.results.isEmpty)
    }

    @Test func faultyRoutesAreEveryDocumentedAction() throws {
        let faulty = try LoadedPlugins.sample("Faulty")
        #expect(faulty.plugin.name == "faulty")
        let actions = ["crash", "abort", "exit", "hang", "never", "sleep", "fail", "cancel", "noise", "twice"]
        #expect(faulty.routeTexts == actions.map { "faulty://x-callback-url/\($0)" })
    }
}
