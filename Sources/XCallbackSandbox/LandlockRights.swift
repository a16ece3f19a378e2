/// Landlock's access rights, by the ABI version that introduced them
/// (linux/landlock.h; spelled out because Debian's headers stop at ABI 3).
enum LandlockRights {
    static let execute: UInt64 = 1 << 0
    static let writeFile: UInt64 = 1 << 1
    static let readFile: UInt64 = 1 << 2
    static let readDirectory: UInt64 = 1 << 3
    static let removeDirectory: UInt64 = 1 << 4
    static let removeFile: UInt64 = 1 << 5
    static let makeCharacterDevice: UInt64 = 1 << 6
    static let makeDirectory: UInt64 = 1 << 7
    static let makeRegular: UInt64 = 1 << 8
    static let makeSocket: UInt64 = 1 << 9
    static let makeFIFO: UInt64 = 1 << 10
    static let makeBlockDevice: UInt64 = 1 << 11
    static let makeSymlink: UInt64 = 1 << 12
    static let refer: UInt64 = 1 << 13          // ABI 2
    static let truncate: UInt64 = 1 << 14       // ABI 3
    static let ioctlDevice: UInt64 = 1 << 15    // ABI 5

    static let bindTCP: UInt64 = 1 << 0         // ABI 4 (network)
    static let connectTCP: UInt64 = 1 << 1

    static let scopeAbstractUnixSocket: UInt64 = 1 << 0  // ABI 6
    static let scopeSignal: UInt64 = 1 << 1

    /// Every file-system right ABI `abi` knows: all of them are handled, so
    /// anything not granted below is denied.
    static func handledFileSystem(abi: Int) -> UInt64 {
        var rights: UInt64 = (1 << 13) - 1
        if abi >= 2 { rights |= refer }
        if abi >= 3 { rights |= truncate }
        if abi >= 5 { rights |= ioctlDevice }
        return rights
    }

    static let read = readFile | readDirectory
    static let write = writeFile | removeDirectory | removeFile | makeDirectory | makeRegular
        | makeSymlink | makeSocket | makeFIFO | refer | truncate
}
