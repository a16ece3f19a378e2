import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

// One file, linked (a symbolic link) into XCallbackHostTests/Support and
// FFITests too: their suites that compile plug-ins, run probes or wait on
// pipes take `.ownThreads` the same way (each test module has its own slots).

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
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    /// Each test case of the suite gets a scope of its own (its threads).
    var isRecursive: Bool { true }

    /// The suite's scope (its slot), and each test case's (its threads).
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        if testCase != nil {
            // Around the body itself, so it holds whatever tasks Swift
            // Testing makes between a suite and its test cases (a preference
            // reaches child tasks, not unstructured ones).
            return try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) {
                // A preference takes effect when the task is next enqueued;
                // the yield is that hop, so a synchronous body starts on an
                // own thread whether or not the call into it hops.
                await Task.yield()
                try await function()
            }
        }
        // A suite inside one that holds a slot runs in that slot.
        guard !Self.holdsSlot else { return try await function() }
        await SuiteSlots.shared.acquire()
        defer { SuiteSlots.shared.release() }
        try await Self.$holdsSlot.withValue(true) {
            try await function()
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
        let thread = Thread {
            OwnThread.markCurrent()
            unowned.runSynchronously(on: executor)
        }
        // Tests' stacks: the harness keeps output buffers there, and some
        // plug-in fixtures recurse.
        thread.stackSize = 4 << 20
        thread.start()
    }
}

/// The threads a test may block: those of `.ownThreads` suites and of
/// `offCooperativePool`, threads a test started itself, and the main
/// thread (an `atexit` handler).
enum OwnThread {
    /// Set (non-nil) on the threads a test may block. A thread-specific
    /// value, not a thread name: Foundation's `Thread.current.name` reports
    /// a dispatch worker's name on threads it started itself.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create")
        return key
    }()

    /// Marks the calling thread as one a test may block.
    static func markCurrent() {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
    }

    static var isCurrent: Bool { pthread_getspecific(key) != nil }

    /// A thread for `body`, marked as the test's own.
    static func detach(_ body: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            markCurrent()
            body()
        }
    }

    /// Records an issue when the caller, about to block in a wait for a
    /// process, a pipe or a socket, is on one of Swift Testing's cooperative
    /// threads: a new test that forgot `.ownThreads` fails at once, with
    /// what to do, instead of making other tests time out on a busy machine.
    static func checkMayBlock(_ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        // A thread with no test (one a test started itself) is not the pool's.
        guard Test.current != nil, !Thread.isMainThread, !isCurrent else { return }
        Issue.record("""
            \(what()) blocks one of Swift Testing's cooperative threads (two on two cores): \
            give the suite `.ownThreads`, or await the wait through `offCooperativePool`
            """, sourceLocation: sourceLocation)
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
