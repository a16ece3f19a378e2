import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plain C function reachable as an action: its address, its declared
/// signature, and the call interface prepared for it at load time.
///
/// A call converts the request's named values to the declared C types (route
/// arguments first, then query parameters; the first value of a repeated
/// name), calls through libffi, and answers success with the return value as
/// `resultName` (no parameter for `void`). A value that is missing or does
/// not convert is a `ParameterError`, and the function is not called. A call
/// completes before it returns: there is no reply token to complete later.
public final class BoundFunction: @unchecked Sendable {
    // @unchecked: every stored property is immutable; the function pointer
    // is the plug-in's (or library's), and a bound C function is called from
    // host threads like any handler.
    public let declaration: CDeclaration
    /// The outcome parameter holding the return value (`result` unless declared otherwise).
    public let resultName: String
    private let address: @convention(c) () -> Void
    private let interface: FFICallInterface

    /// Prepares the call interface for `declaration`; `address` must be a
    /// function with exactly that C signature (the host cannot check it).
    public init(declaration: CDeclaration, address: UnsafeRawPointer, resultName: String?) throws(FFIPreparationError) {
        self.declaration = declaration
        self.resultName = resultName ?? "result"
        self.address = unsafeBitCast(address, to: (@convention(c) () -> Void).self)
        self.interface = try FFICallInterface(declaration)
    }

    /// Calls the function for one request.
    public func call(_ request: RequestFields) -> Outcome {
        let parameters = declaration.parameters
        return withUnsafeTemporaryAllocation(
            byteCount: max(parameters.count, 1) * ArgumentConversion.slotSize, alignment: 16
        ) { slots -> Outcome in
            withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: max(parameters.count, 1)) { pointers in
                var strings: [UnsafeMutablePointer<CChar>] = []
                defer { strings.forEach { free($0) } }
                for (index, parameter) in parameters.enumerated() {
                    let slot = slots.baseAddress! + index * ArgumentConversion.slotSize
                    pointers[index] = slot
                    guard let text = Self.value(of: parameter.name, in: request) else {
                        return ArgumentError(parameter: parameter.name, type: parameter.type, problem: .missing).outcome
                    }
                    do throws(ArgumentError) {
                        if let copy = try ArgumentConversion.store(text, for: parameter, into: slot) {
                            strings.append(copy)
                        }
                    } catch {
                        return error.outcome
                    }
                }
                return withUnsafeTemporaryAllocation(byteCount: FFICallInterface.returnBufferSize, alignment: 16) { result in
                    let buffer = result.baseAddress!
                    memset(buffer, 0, result.count)
                    interface.call(address, returnValue: buffer,
                                   arguments: parameters.isEmpty ? nil : pointers.baseAddress)
                    guard let text = ArgumentConversion.text(of: declaration.returnType.type, in: buffer) else {
                        return .success()
                    }
                    return .success([QueryParameter(name: resultName, value: text)])
                }
            }
        }
    }

    /// The first value named `name`: a route argument (`:name`) if the
    /// route has one, else a query parameter.
    private static func value(of name: String, in request: RequestFields) -> String? {
        request.arguments.first { $0.name == name }?.value ?? request.parameters.first { $0.name == name }?.value
    }
}
