import ArgumentParser
import XCallbackCLI

// The queue's commands as `xcallback` lists them (help, completions, "did you
// mean"). `XCallback.main` hands them to `xcallback-queue` before parsing, so
// these never run; `xcallback-queue` has the real ones (QueueCommands.swift).

struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Create, inspect and tend a durable request queue on PostgreSQL that many hosts share (docs/queue.md).")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { QueueHandover.execQueueBinary() }
}

struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Add request URLs to a queue; prints one request id per accepted line.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { QueueHandover.execQueueBinary() }
}

struct OutcomesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "Print a queue's recorded outcomes, in the record formats of `run`.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { QueueHandover.execQueueBinary() }
}
