import CHostSupport
import Logging
import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Serving inputs: stdin, FIFOs and sockets, each read by an input loop
// whose records go to one output sink.
extension Host {
    /// An input ready to be read.
    private enum OpenedInput: Sendable {
        case fifo(FIFOInput)
        case socket(SocketListener)
    }

    /// Reads requests from `input` until end of input, then waits for every
    /// outcome and returns. Records go to `output`.
    public func serve(input: Int32, output: Int32) {
        startBackgroundWork()
        let sink = makeSink(output, input: .stdin)
        let loop = runLoop(input: input, sink: sink)
        drain(loop)
        finishBackgroundWork()
    }

    /// Reads each input `next` hands out to its end, one after another,
    /// until `next` returns nil or the host is asked to stop; each input's
    /// records are all written (in its own order with `keepOrder`) before
    /// the next is asked for. Records go to `output`.
    public func serve(inputsInOrder next: () -> Int32?, output: Int32) {
        startBackgroundWork()
        while !stopSignal.isRaised, let input = next() {
            drain(runLoop(input: input, sink: makeSink(output, input: .file)))
        }
        finishBackgroundWork()
    }

    /// Serves long-running inputs, each on its own thread, until
    /// SIGINT/SIGTERM: a FIFO (any number of writers opening and closing it;
    /// records to `output`) and sockets (each connection sends lines and
    /// reads its own records). Every input is opened before any is served,
    /// so a setup error leaves nothing half-started.
    public func serve(_ inputs: [ServedInput], output: Int32) throws(HostSetupError) {
        // Watch before any input can take a request: a plug-in dropped in
        // once a client can connect is then always seen.
        let watcher = DirectoryWatcher(directories: configuration.pluginDirectories, stop: stopSignal, logger: logger)
        let opened = try open(inputs)
        startBackgroundWork()
        watchPlugins(with: watcher)
        let running = ConditionLock(opened.count)
        for input in opened {
            Threads.detach { [self] in
                serve(input, output: output)
                running.withLock { $0 -= 1 }
                running.broadcast()
            }
        }
        running.wait(until: { $0 == 0 }) { _ in }
        finishBackgroundWork()
    }

    private func open(_ inputs: [ServedInput]) throws(HostSetupError) -> [OpenedInput] {
        var opened: [OpenedInput] = []
        do throws(HostSetupError) {
            for input in inputs {
                switch input {
                case .fifo(let path): opened.append(.fifo(try FIFOInput.open(path)))
                case .socket(let path): opened.append(.socket(try SocketListener(path: path)))
                case .inheritedSocket(let socket): opened.append(.socket(SocketListener(inherited: socket)))
                }
            }
        } catch {
            for input in opened {
                switch input {
                case .fifo(let fifo): fifo.closeDescriptors()
                case .socket(let listener): listener.stopListening()
                }
            }
            throw error
        }
        return opened
    }

    private func serve(_ input: OpenedInput, output: Int32) {
        switch input {
        case .fifo(let fifo):
            let loop = runLoop(input: fifo.readDescriptor, sink: makeSink(output, input: .fifo))
            // Closed before the grace period: a writer now gets an error
            // (`send`: no host is reading) instead of lines no one will read.
            fifo.closeDescriptors()
            drain(loop)
        case .socket(let listener):
            let reported = Lock(Set<uid_t>())
            let counts = metrics?.input(.socket)
            listener.acceptConnections(until: stopSignal, refused: { [logger] uid in
                counts?.refused(.peer)
                guard reported.withLock({ $0.insert(uid ?? uid_t.max).inserted }) else { return }
                let who = uid.map { "uid \($0)" } ?? "a peer whose uid is unknown"
                logger.warning("refused a connection to the socket from \(who): only uid \(geteuid()) and root may connect (logged once per uid)")
            }, busy: { [format = configuration.output] connection, reason in
                counts?.refused(.busy)
                BusyConnection.answer(connection, reason: reason, format: format)
            }) { [self] connection in
                counts?.connectionsOpened.add()
                defer { counts?.connectionsClosed.add() }
                let sink = OutputSink(connection: connection, format: configuration.output,
                                      keepOrder: configuration.keepOrder, tally: tally,
                                      stop: stopSignal, gracePeriod: configuration.gracePeriod,
                                      writeDeadline: configuration.idleTimeout, input: counts,
                                      onDropped: { [logger, idle = configuration.idleTimeout] in
                                          logger.warning("dropped a socket connection whose client did not read its records within \(idle) (--idle-timeout)")
                                      })
                let loop = runLoop(input: connection, sink: sink)
                drain(loop)
                close(connection)
            }
        }
    }

    private func makeSink(_ output: Int32, input: InputKind) -> OutputSink {
        OutputSink(descriptor: output, format: configuration.output, keepOrder: configuration.keepOrder,
                   opener: opener, tally: tally, input: metrics?.input(input), onClosed: { [self] in
                       // A closed stdout ends the host quietly (docs/usage.md, "run").
                       outputClosed.store(true, ordering: .releasing)
                       requestStop()
                   })
    }

    private func runLoop(input: Int32, sink: OutputSink) -> InputLoop {
        let reader = LineReader(descriptor: input, wake: stopSignal.descriptor,
                                maxLineBytes: configuration.limits.maxLineBytes,
                                refusalWindow: configuration.gracePeriod, idleTimeout: configuration.idleTimeout)
        reader.bytesRead = sink.input?.bytes
        let loop = InputLoop(reader: reader, dispatcher: dispatcher, sink: sink, watchdog: watchdog)
        loop.start()
        // A stop ends the reading, once the thread that owns the input looks.
        // Two never would: one stuck in an in-process handler that never
        // returns, once the watchdog's cap on stalled threads is reached, and
        // one stuck writing to a worker that stopped reading. At the end of
        // the grace period a new thread relieves the first (and lines not yet
        // run are answered `ShuttingDown`); a margin later, what is in flight
        // is answered `Timeout` and such workers are ended, which fails that
        // write.
        var workersEnded = false
        while !loop.waitUntilInputEnds(deadline: MonotonicClock.now + 100_000_000) {
            guard let raisedAt = stopSignal.raisedAt,
                  MonotonicClock.now >= raisedAt + configuration.gracePeriod.nanoseconds
            else { continue }
            loop.relieveStalledReader()
            guard !workersEnded,
                  MonotonicClock.now >= raisedAt + configuration.gracePeriod.nanoseconds + Self.stuckInputMargin
            else { continue }
            workersEnded = true
            dispatcher.expireAll(stoppedWithGrace: configuration.gracePeriod)
            for case let worker as WorkerEndpoint in registry.endpoints { worker.endIfStuck() }
        }
        return loop
    }
}
