// Fuzz target `worker-wire`: plays a worker against the host's decoder of what
// workers write (random frames on the socket, in random chunks, then a random
// page left behind at death). The properties are in
// Fuzz/Properties/WorkerWireProperties.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runFuzzInput(data, size, WorkerWireProperties.check)
}
