import Logging
import XCallbackBridge
import XCallbackRouting
import XCallbackSystem
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Learns what a plug-in file is (its identity, its routes, what it was
/// refused) for `check`, `plugins` and `routes`, and for a rescan's first
/// look at a file dropped into a host that runs plug-ins in process.
///
/// From a worker started as `run` starts one (`WorkerLauncher`: the same
/// `__worker` entry, descriptors, sandbox plan and zygote), through the
/// same handshake and frame decoder; then the worker is shut down. So what
/// the operator is shown is what `run` registers, and there is one probe
/// protocol, not two: a listing used to come from a report in a format of
/// its own, on a descriptor a constructor could write a report to. A
/// constructor that crashes or hangs takes only the worker down (as
/// GStreamer's plug-in scanner keeps `gst-inspect` up).
public final class PluginProbe: Sendable {
    /// The worker is killed, and the file refused, past this many seconds:
    /// a constructor or registration that never returns must not hang
    /// `xcallback check` or a rescan.
    public static let timeLimit: Int32 = 10
    /// How long a probed worker has to run its plug-in's shutdown hook and
    /// exit before it is killed.
    static let shutdownGrace: Int32 = 1

    private let executable: String
    private let spawner: WorkerSpawner
    /// Whether each probe waits for its worker's output to be logged (a
    /// relay of its own; a host's relays its running workers' too).
    private let waitsForOutput: Bool

    /// Probes with the executable at `executable` (`xcallback`); what the
    /// plug-ins print is logged to `logger`, as a host logs its workers'.
    public convenience init(executable: String, logger: Logger) {
        self.init(executable: executable, spawner: WorkerSpawner(output: WorkerOutputRelay(logger: logger)),
                  waitsForOutput: true)
    }

    /// Probes with a host's own spawner (its thread, zygote and relay).
    init(executable: String, spawner: WorkerSpawner, waitsForOutput: Bool = false) {
        self.executable = executable
        self.spawner = spawner
        self.waitsForOutput = waitsForOutput
    }

    /// What the plug-in at `path` is, as a worker under `sandboxing`
    /// reports it. `taken` are the routes plug-ins loaded before it own
    /// (pattern, owner): registering one fails as it would in the host.
    public func probe(_ path: String, security: FileSecurity, sandboxing: WorkerSandboxing,
                      taken: [QueryParameter] = [], timeLimit: Int32 = PluginProbe.timeLimit) -> PluginStatus {
        let (executable, spawner) = (executable, spawner)
        // From the spawner's thread, as every worker is started: a worker
        // dies with the thread that started it (PR_SET_PDEATHSIG).
        let launched = spawner.run { () -> Result<WorkerLauncher.Launch, WorkerLauncher.StartError> in
            Result { () throws(WorkerLauncher.StartError) in
                try WorkerLauncher.launch(executable: executable, pluginPath: path, security: security,
                                          sandboxing: sandboxing, taken: taken, zygote: spawner.zygote(for: executable),
                                          output: spawner.output)
            }
        }
        let launch: WorkerLauncher.Launch
        switch launched {
        case .success(let started): launch = started
        case .failure(let error): return Self.refused(path, error, timeLimit: timeLimit)
        }
        let reader = FrameReader(descriptor: launch.socket)
        let ready: WorkerProcess.Ready
        do {
            ready = try WorkerLauncher.awaitReady(launch, reader: reader, timeout: timeLimit)
        } catch {
            finishRelaying()
            return Self.refused(path, error, timeLimit: timeLimit)
        }
        let spoke = shutDown(launch, reader: reader)
        finishRelaying()
        if spoke {
            return PluginStatus(path: path, info: nil, routes: [], error: PluginLoadError(path: path, reason: .other(
                "its worker wrote frames after its handshake, before any request (its plug-in writes on the worker's socket)")))
        }
        var status = PluginStatus(path: path, info: ready.info, routes: ready.routes.compactMap { try? RoutePattern($0) },
                                  error: nil,
                                  signatures: Dictionary(ready.signatures.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }))
        status.refusedRoutes = ready.refused.map { RefusedRoute(pattern: $0.name, owner: $0.value) }
        return status
    }

    /// Asks the worker to shut down (its plug-in's shutdown hook runs, as
    /// at a host's stop), then reaps it. True when it wrote any frame
    /// meanwhile: a worker that has had no request has nothing to say, so
    /// such a frame (a second `ready`, say) is one its plug-in wrote.
    private func shutDown(_ launch: WorkerLauncher.Launch, reader: FrameReader) -> Bool {
        WorkerLauncher.sendFrame(.shutdown, to: launch.socket)
        // Through the handshake's reader: what it read past the echo counts.
        let deadline = MonotonicClock.now + UInt64(Self.shutdownGrace) * 1_000_000_000
        let spoke: Bool
        switch reader.next(beforeBlocking: { WorkerLauncher.limitReads(launch.socket, until: deadline) }) {
        case .end: spoke = false  // it exited, or its hook is still running: it is killed below
        case .frame, .malformed, .intercepted: spoke = true
        }
        close(launch.socket)
        _ = launch.parent.reap(launch.pid, grace: 0)
        return spoke
    }

    /// Waits (a second at most) until the relay has logged what the probed
    /// workers printed, so a plug-in's lines come before what is printed
    /// about it.
    private func finishRelaying() {
        guard waitsForOutput else { return }
        spawner.output.waitUntilRelayed(until: MonotonicClock.now + 1_000_000_000)
    }

    /// The refusal `check` shows for a worker that never became ready.
    private static func refused(_ path: String, _ error: WorkerLauncher.StartError, timeLimit: Int32) -> PluginStatus {
        let reason: PluginLoadError.Reason
        if let refusal = error.refusal {
            return PluginStatus(path: path, info: nil, routes: [], error: refusal)
        } else if error.timedOut {
            reason = .other("did not finish loading within \(timeLimit) s (a constructor or registration that never returns?)")
        } else if let signal = error.exit?.signal, error.violation == nil {
            reason = .crashed("signal \(signal), \(signalName(signal))")
        } else {
            // The worker's own message names the file first, as the path is
            // printed; the refusal adds it again.
            let prefix = PrintableText.escaping(path) + ": "
            let prefixed = [prefix, path + ": "].first { error.message.hasPrefix($0) }
            reason = .other(prefixed.map { String(error.message.dropFirst($0.count)) } ?? error.message)
        }
        return PluginStatus(path: path, info: nil, routes: [], error: PluginLoadError(path: path, reason: reason))
    }

    /// SIGSEGV, SIGABRT… for messages.
    public static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: return "SIGSEGV"
        case SIGABRT: return "SIGABRT"
        case SIGBUS: return "SIGBUS"
        case SIGILL: return "SIGILL"
        case SIGFPE: return "SIGFPE"
        case SIGKILL: return "SIGKILL"
        case SIGTERM: return "SIGTERM"
        case SIGTRAP: return "SIGTRAP"
        default: return String(cString: strsignal(signal))
        }
    }
}
