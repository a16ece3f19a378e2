import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A suite whose tests wait for processes, pipes and sockets: its tests run
/// on threads of their own, so a test that blocks holds none of Swift
/// Testing's cooperative threads (two on two cores), and at most
/// `SuiteSlots.width` such suites run at once.
///
/// Why both. Swift Testing starts a test's time limit when it schedules the
/// test, and runs tests on its cooperative pool: on 2 cores, a test blocked
/// in a wait held one of the two threads, and the tests queued behind it
/// spent their minute waiting for a thread (the "Time limit was exceeded"
/// failures of a busy machine). On threads of their own no test queues for
/// a thread; a suite takes its slot before any of its tests starts, outside
/// their time limits, so a test's limit covers its own work and the machine
/// is not flooded with hosts.
struct OwnThreadsTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        // A suite inside one that holds a slot runs in that slot.
        guard !Self.holdsSlot else { return try await function() }
        await SuiteSlots.shared.acquire()
        defer { SuiteSlots.shared.release() }
        // Inherited by the suite's test tasks (child tasks), so their
        // synchronous bodies run, and block, on the executor's threads.
        try await Self.$holdsSlot.withValue(true) {
            try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) {
                try await function()
            }
        }
    }

    @TaskLocal static var holdsSlot = false
}

extension Trait where Self == OwnThreadsTrait {
    /// See `OwnThreadsTrait`.
    static var ownThreads: Self { OwnThreadsTrait() }
}

/// Runs each job on a new thread: a job may block for as long as its test
/// waits, and no other job waits behind it. Jobs are a test's stretches of
/// code between awaits, so threads are made per stretch, not per line.
final class ThreadPerJobExecutor: TaskExecutor {
    static let shared = ThreadPerJobExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let thread = Thread { unowned.runSynchronously(on: executor) }
        // Tests' stacks: the harness keeps output buffers there, and some
        // plug-in fixtures recurse.
        thread.stackSize = 4 << 20
        thread.start()
    }
}

/// The suites with their own threads that may run at once.
final class SuiteSlots: Sendable {
    static let shared = SuiteSlots(width: width)

    /// Two per core, at least 4: enough to keep the machine busy while some
    /// suites wait on timers, few enough that hosts do not starve each other.
    /// `XCALLBACK_TEST_SUITES` sets it.
    static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["XCALLBACK_TEST_SUITES"], let value = Int(text), value > 0 {
            return value
        }
        return max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(width: Int) {
        state = Mutex(State(free: width))
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
