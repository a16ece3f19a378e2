import CFFI

/// Why libffi refused a declaration (in practice never, for the supported types).
public struct FFIPreparationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: String
    public var declaration: String

    public var description: String {
        "libffi cannot prepare a call to \(declaration) (ffi_prep_cif: \(status))"
    }
}

/// The libffi call interface (`ffi_cif`) of one declaration.
///
/// Prepared once, at load time: the `ffi_cif` and the `ffi_type *` array it
/// points to live in memory this object owns, and it lives as long as the
/// ``BoundFunction`` holding it (in the host, for the life of the process,
/// since plug-ins are never unloaded). A prepared `ffi_cif` is read-only, so
/// any number of threads may call through it at once; the per-call state
/// (argument storage, return buffer) belongs to each call.
public final class FFICallInterface: @unchecked Sendable {
    // @unchecked: `cif` and `argumentTypes` are written only in init, then
    // only read by ffi_call.
    private let cif: UnsafeMutablePointer<ffi_cif>
    private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>
    public let returnType: CType
    public let parameterTypes: [CType]

    /// Bytes of the return buffer: at least `sizeof(ffi_arg)` (libffi writes
    /// a whole `ffi_arg` for integer returns narrower than it) and at least
    /// the largest value type.
    public static let returnBufferSize = max(Int(xcallback_ffi_arg_size()), 16)

    public init(_ declaration: CDeclaration) throws(FFIPreparationError) {
        returnType = declaration.returnType.type
        parameterTypes = declaration.parameters.map(\.type.type)
        let count = parameterTypes.count
        argumentTypes = .allocate(capacity: max(count, 1))
        for (index, type) in parameterTypes.enumerated() {
            (argumentTypes + index).initialize(to: type.ffiType)
        }
        cif = .allocate(capacity: 1)
        cif.initialize(to: ffi_cif())
        let status = ffi_prep_cif(cif, xcallback_ffi_default_abi(), UInt32(count), returnType.ffiType,
                                  count == 0 ? nil : argumentTypes)
        guard status == FFI_OK else {
            cif.deallocate()
            argumentTypes.deallocate()
            throw FFIPreparationError(status: Self.name(of: status), declaration: declaration.description)
        }
    }

    deinit {
        cif.deallocate()
        argumentTypes.deallocate()
    }

    /// Calls `function` with `arguments` (one pointer per parameter, to a
    /// value of the parameter's type) and the return value written to
    /// `returnValue` (``returnBufferSize`` bytes, 16-byte aligned).
    public func call(_ function: @convention(c) () -> Void,
              returnValue: UnsafeMutableRawPointer,
              arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        ffi_call(cif, function, returnValue, arguments)
    }

    private static func name(of status: ffi_status) -> String {
        switch status {
        case FFI_BAD_TYPEDEF: return "FFI_BAD_TYPEDEF"
        case FFI_BAD_ABI: return "FFI_BAD_ABI"
        default: return "status \(status.rawValue)"
        }
    }
}
