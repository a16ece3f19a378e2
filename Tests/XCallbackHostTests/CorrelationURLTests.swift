import Testing
import XCallbackURL
@testable import XCallbackHost

/// The URLs of client correlation (`call --via-open`): request IDs, the
/// callbacks added to the request, and the lines sent to the host.
@Suite("Correlation URLs")
struct CorrelationURLTests {
    @Test("request IDs: 8 to 128 unreserved characters; random ones are 32 fresh hex digits")
    func requestIDs() throws {
        for valid in ["abcdefgh", "0123456789ABCDEF", "a-b.c_d~e", String(repeating: "z", count: 128)] {
            #expect(throws: Never.self) { try RequestID(valid) }
        }
        for invalid in ["", "short", String(repeating: "z", count: 129), "has space", "a&b=cdefgh", "percent%20", "ünïcödé1"] {
            #expect(throws: InvalidRequestID.self) { try RequestID(invalid) }
        }
        let ids = (0..<100).map { _ in RequestID.random().text }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
    }

    @Test("the request keeps its text and gains x-source and three callbacks to the host, before any fragment")
    func request() throws {
        let id = try RequestID("0123456789abcdef")
        let response = "xcallback%3A%2F%2Fx-callback-url%2Fresponse%3FrequestID%3D0123456789abcdef%26responseType%3D"
        #expect(try Correlation.request("app://x-callback-url/do?a=1+2#top", answeringTo: id)
            == "app://x-callback-url/do?a=1+2&x-source=xcallback&x-success=\(response)success&x-error=\(response)error&x-cancel=\(response)cancel#top")
        #expect(try Correlation.request("app://x-callback-url/do", answeringTo: id)
            .hasPrefix("app://x-callback-url/do?x-source=xcallback&x-success="))
        // A URL that names its sender keeps it.
        let named = try Correlation.request("app://x-callback-url/do?x-source=Mine", answeringTo: id)
        #expect(named.hasPrefix("app://x-callback-url/do?x-source=Mine&x-success="))
        let parsed = try RequestURL(parsing: named)
        #expect(parsed.source == "Mine")
        #expect(parsed.successURL == Correlation.responseURL(id, .success))
        #expect(parsed.errorURL == "xcallback://x-callback-url/response?requestID=0123456789abcdef&responseType=error")
        #expect(parsed.cancelURL == Correlation.responseURL(id, .cancel))
    }

    @Test("a URL that names a callback already, or is not a URL, is refused")
    func refused() throws {
        let id = RequestID.random()
        for callback in ["x-success", "x-error", "x-cancel"] {
            #expect(throws: CorrelationError.self) { try Correlation.request("app://x/y?\(callback)=other%3A%2F%2Fz", answeringTo: id) }
        }
        #expect(throws: CorrelationError.self) { try Correlation.request("no scheme here", answeringTo: id) }
    }

    @Test("await lines carry the ID and the timeout in plain decimal")
    func awaitLines() throws {
        let id = try RequestID("0123456789abcdef")
        #expect(Correlation.awaitURL(id, timeoutSeconds: 300) == "xcallback://x-callback-url/await?requestID=0123456789abcdef&timeout=300")
        #expect(Correlation.awaitURL(id, timeoutSeconds: 0.5) == "xcallback://x-callback-url/await?requestID=0123456789abcdef&timeout=0.5")
    }
}
