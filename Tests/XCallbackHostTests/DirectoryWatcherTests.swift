import Foundation
import Logging
import Testing

@testable import XCallbackHost
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// `DirectoryWatcher`: the watches exist once it is made, so nothing that
/// changes between the host's start-up scan and the watcher thread's first
/// step is missed.
@Suite("Directory watcher", .ownThreads)
struct DirectoryWatcherTests {
    /// Counts `onChange` calls; waits for them with a bound.
    final class Changes: Sendable {
        private let count = ConditionLock(0)

        func record() {
            count.withLock { $0 += 1 }
            count.broadcast()
        }

        /// The count once it is at least `minimum`, or after `seconds`.
        func wait(forAtLeast minimum: Int, seconds: UInt64) -> Int {
            count.wait(until: { $0 >= minimum }, deadline: MonotonicClock.now + seconds * 1_000_000_000) { $0 }
        }
    }

    /// A private plug-in directory with a watcher made on it (not yet
    /// started), stopped when the value goes away.
    final class WatchedDirectory {
        let directory: TemporaryDirectory
        let plugins: String
        private let stop = StopSignal()
        let watcher: DirectoryWatcher

        init() throws {
            directory = try TemporaryDirectory()
            plugins = try directory.directory("plugins", mode: 0o700)
            watcher = DirectoryWatcher(directories: [plugins], stop: stop, logger: Logger(label: "test"))
        }

        deinit { stop.raise() }
    }

    @Test("a file renamed in after the watcher is made, before its thread runs, is reported")
    func changeBeforeTheThreadStartsIsSeen() throws {
        let watched = try WatchedDirectory()
        defer { withExtendedLifetime(watched) {} }  // its deinit stops the watcher
        let staged = try watched.directory.write("staged.so", "not a plug-in")
        #expect(rename(staged, watched.plugins + "/late.so") == 0)

        let changes = Changes()
        watched.watcher.start { changes.record() }
        #expect(changes.wait(forAtLeast: 1, seconds: 10) == 1)
    }

    @Test("changes after the start are reported: a file renamed in, then its removal")
    func changesAfterTheStartAreSeen() throws {
        let watched = try WatchedDirectory()
        defer { withExtendedLifetime(watched) {} }  // its deinit stops the watcher
        let plugins = watched.plugins
        let changes = Changes()
        watched.watcher.start { changes.record() }

        let hidden = try watched.directory.write("plugins/.a.so.partial", "first")
        #expect(rename(hidden, plugins + "/a.so") == 0)
        let afterAdding = changes.wait(forAtLeast: 1, seconds: 10)
        #expect(afterAdding >= 1)
        #expect(unlink(plugins + "/a.so") == 0)
        #expect(changes.wait(forAtLeast: afterAdding + 1, seconds: 10) > afterAdding)
    }
}
