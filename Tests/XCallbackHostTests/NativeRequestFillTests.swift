import Testing
@testable import XCallbackBridge
import XCallbackURL

/// A request filled part by part (`beginFill`, `add…`) holds every part,
/// whatever `beginFill` was told they would take.
@Suite("Native request fill")
struct NativeRequestFillTests {
    private static func withBytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        var text = text
        text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    @Test("parts past beginFill's estimate grow the storage and keep what was filled")
    func partsOutgrowTheEstimate() {
        // Built from empty fields: its storage is as small as it gets.
        let request = NativeRequest(RequestFields(url: "", scheme: "", source: nil, parameters: [], arguments: []),
                                    route: "")
        let route = "calc://x-callback-url/add"
        // Told the parts take nothing at all: every byte below is more than that.
        request.beginFill(byteCount: 0, route: route)
        Self.withBytes("calc://x-callback-url/add?many=1") { request.addURL($0) }
        Self.withBytes("calc") { request.addScheme($0) }
        Self.withBytes("Tester") { request.addSource($0) }
        let parameters = (0..<200).map { QueryParameter("p\($0)", String(repeating: "v", count: $0)) }
        for item in parameters {
            Self.withBytes(item.name) { name in Self.withBytes(item.value) { request.addParameter(name: name, value: $0) } }
        }
        Self.withBytes("id") { name in Self.withBytes("42") { request.addArgument(name: name, value: $0) } }
        request.assign(id: 7, attempt: 2)

        #expect(String(cString: request.url) == "calc://x-callback-url/add?many=1")
        #expect(String(cString: request.scheme) == "calc")
        #expect(String(cString: request.route) == route)
        #expect(request.source.map { String(cString: $0) } == "Tester")
        #expect(request.parameterCount == parameters.count)
        for (index, item) in parameters.enumerated() {
            #expect(request.parameterName(at: index).map { String(cString: $0) } == item.name)
            let value = request.parameterValue(at: index)
            #expect(value.map { String(cString: $0.0) } == item.value && value?.1 == item.value.utf8.count)
        }
        #expect(request.argumentCount == 1)
        #expect(request.argumentValue(at: 0).map { String(cString: $0) } == "42")
        #expect(request.id == 7 && request.attempt == 2)
    }

    @Test("a refill from fields sizes its storage for every part")
    func refillFromFields() {
        let request = NativeRequest()
        let parameters = (0..<100).map { QueryParameter("name\($0)", String(repeating: "é", count: $0)) }
        let fields = RequestFields(url: "a://b", scheme: "a", source: nil, parameters: parameters,
                                   arguments: [QueryParameter("x", "")], id: 3, attempt: 1)
        request.refill(fields, route: "a://:x")
        #expect(String(cString: request.url) == "a://b")
        #expect(String(cString: request.route) == "a://:x")
        #expect(request.source == nil)
        #expect(request.parameterCount == parameters.count)
        #expect(request.parameterValue(at: 99).map { String(cString: $0.0) } == parameters[99].value)
        #expect(request.argumentValue(at: 0).map { String(cString: $0) } == "")
        #expect(request.fields == fields)
    }
}
