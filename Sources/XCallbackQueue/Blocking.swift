#if Queue  // the package's Queue trait: swift build --traits Queue
import Dispatch

/// Runs async work from a synchronous caller (the command line, the host's
/// threads) and waits for it. Never called from inside a task.
public enum Blocking {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        Task.detached {
            do { result.value = .success(try await body()) } catch { result.value = .failure(error) }
            done.signal()
        }
        done.wait()
        return try result.value!.get()
    }

    private final class ResultBox<T>: @unchecked Sendable {
        // Written by the task before it signals; read after the wait.
        var value: Result<T, any Error>?
    }
}
#endif
