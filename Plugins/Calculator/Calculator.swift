import XCallbackPluginKit

/// The Calculator sample plug-in (SPEC section 5): `calc://x-callback-url/`
/// add, subtract, multiply and divide `lhs` and `rhs`.
let calculator = Plugin(
    name: "calculator", version: "1.0.0",
    summary: "Adds, subtracts, multiplies and divides decimals"
) { routes in
    routes.action("calc", "add") { try compute($0, +) }
    routes.action("calc", "subtract") { try compute($0, -) }
    routes.action("calc", "multiply") { try compute($0, *) }
    routes.action("calc", "divide") { request in
        let rhs = try request.parameter("rhs", as: Double.self)
        guard rhs != 0 else { throw DivisionByZero() }
        return try compute(request, /)
    }
}

/// Reads both operands, applies `operation`, and labels the result with
/// `text` when given (`result=LABEL=VALUE`).
private func compute(_ request: Request, _ operation: (Double, Double) -> Double) throws -> Reply {
    let lhs = try request.parameter("lhs", as: Double.self)
    let rhs = try request.parameter("rhs", as: Double.self)
    let value = DecimalText.format(operation(lhs, rhs))
    if let label = try request.optionalParameter("text", as: String.self) {
        return .success(["result": "\(label)=\(value)"])
    }
    return .success(["result": value])
}

struct DivisionByZero: PluginError {
    var errorCode: String { "DivisionByZero" }
    var errorMessage: String { "cannot divide by zero" }
    var errorDomain: String? { "calc" }
}

@_cdecl("xcallback_plugin_descriptor")
public func calculatorDescriptor() -> UnsafeRawPointer { calculator.descriptor }

@_cdecl("xcallback_plugin_register")
public func calculatorRegister(_ api: UnsafeRawPointer?, _ plugin: OpaquePointer?) -> Int32 {
    calculator.register(api: api, plugin: plugin)
}
