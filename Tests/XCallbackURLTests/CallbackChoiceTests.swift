import Testing
import XCallbackURL

/// Which callback an outcome goes to: one rule for Strings and bytes.
@Suite("Callback choice")
struct CallbackChoiceTests {
    @Test("each kind picks its own callback; an empty one is none")
    func picks() {
        #expect(OutcomeKind.success.callback(success: "s://", error: "e://", cancel: "c://") == "s://")
        #expect(OutcomeKind.error.callback(success: "s://", error: "e://", cancel: "c://") == "e://")
        #expect(OutcomeKind.cancel.callback(success: "s://", error: "e://", cancel: "c://") == "c://")
        #expect(OutcomeKind.error.callback(success: "s://", error: "", cancel: "c://") == nil)
        #expect(OutcomeKind.cancel.callback(success: "s://", error: "e://", cancel: nil as String?) == nil)
        let bytes: [UInt8] = Array("e://".utf8)
        #expect(OutcomeKind.error.callback(success: nil, error: bytes[...], cancel: nil) == bytes[...])
        #expect(OutcomeKind.error.callback(success: nil, error: bytes[0..<0], cancel: nil) == nil)
    }

    @Test("RequestURL's callbackURL(for:) is that rule")
    func requestURL() throws {
        let url = try RequestURL(parsing: "a://x-callback-url/b?x-success=s%3A%2F%2F&x-error=")
        #expect(url.callbackURL(for: .success) == "s://")
        #expect(url.callbackURL(for: .error) == nil)
        #expect(url.callbackURL(for: .cancel) == nil)
    }
}
