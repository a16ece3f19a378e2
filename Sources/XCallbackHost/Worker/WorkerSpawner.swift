import XCallbackSystem

/// The one thread that starts worker processes.
///
/// A worker asks the kernel for SIGKILL when its parent dies
/// (PR_SET_PDEATHSIG) so it never outlives the host, but Linux ties that to
/// the parent *thread*: a worker started from a short-lived thread is killed
/// when that thread ends. So every worker is started from this thread,
/// which lives as long as the process.
final class WorkerSpawner: Sendable {
    private struct Job: Sendable {
        var notBefore: UInt64
        var body: @Sendable () -> Void
    }

    private let jobs = ConditionLock([Job]())
    /// Where every worker's (and the zygote's) stdout and stderr go.
    let output: WorkerOutputRelay
    private let zygote = Lock<ZygoteClient?>(nil)

    /// The zygote to fork workers of `executable` from, started on first
    /// use (and again if it died); nil where workers are executed instead.
    /// Called on the spawner thread only: the zygote dies with the thread
    /// that started it (PR_SET_PDEATHSIG).
    func zygote(for executable: String) -> ZygoteClient? {
        guard ZygoteClient.isWanted else { return nil }
        return zygote.withLock { current in
            if let running = current, running.isAlive { return running }
            current = ZygoteClient.start(executable: executable, output: output)
            return current
        }
    }

    init(output: WorkerOutputRelay) {
        self.output = output
        Threads.detach { [jobs] in
            while true {
                let (count, deadline) = jobs.withLock { ($0.count, $0.map(\.notBefore).min()) }
                // Wake for a due job, or for a new one (it may be due sooner).
                let job = jobs.wait(until: { queue in
                    queue.count != count || queue.contains { $0.notBefore <= MonotonicClock.now }
                }, deadline: deadline) { queue -> Job? in
                    let now = MonotonicClock.now
                    guard let index = queue.firstIndex(where: { $0.notBefore <= now }) else { return nil }
                    return queue.remove(at: index)
                }
                job?.body()
            }
        }
    }

    /// Runs `body` on the spawner thread after `delay`.
    func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(Job(notBefore: MonotonicClock.now + delay.nanoseconds, body: body)) }
        jobs.broadcast()
    }

    /// Runs `body` on the spawner thread and waits for its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = ConditionLock<T?>(nil)
        schedule(after: .zero) {
            let value = body()
            result.withLock { $0 = value }
            result.broadcast()
        }
        return result.wait(until: { $0 != nil }) { $0! }
    }
}
