import RCCore

/// A long-running part of the daemon: the control server, the fetch scheduler, a push channel, a
/// watch on a file, the network or the clock. Its `run()` works until its task is cancelled, which
/// is how every service is stopped; returning or throwing before that is a failure, and ends the
/// daemon with the reason logged (systemd starts it again), as swift-service-lifecycle's
/// ServiceGroup does.
protocol Service: Sendable {
    /// Names the service in the log line that reports its end ("control socket", "mqtt ...").
    var name: String { get }
    func run() async throws
    /// Undoes, before a reload stops the service for good, what should not outlive it (an MQTT
    /// subscription held by the broker's persistent session). A daemon that stops keeps it.
    func retire() async
}

extension Service {
    func retire() async {}

    /// Runs the service and reports an end that nobody asked for.
    func supervised(onFailure: @Sendable (String) -> Void) async {
        do {
            try await run()
            if !Task.isCancelled { onFailure("The \(name) stopped") }
        } catch {
            if !Task.isCancelled { onFailure("The \(name) failed: \(error)") }
        }
    }
}

/// Waits until the calling task is cancelled: the body of a service whose work happens on a
/// thread or descriptor watch of its own, between its start and its stop.
func untilCancelled() async {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    await withTaskCancellationHandler {
        for await _ in stream {}
    } onCancel: {
        continuation.finish()
    }
}

/// A component at the OS edge (a thread, a descriptor watch) made a service: `start` starts it and
/// returns how to stop it; the service stops it when cancelled.
struct EdgeService: Service {
    let name: String
    let start: @Sendable () throws -> @Sendable () -> Void

    func run() async throws {
        let stop = try start()
        await untilCancelled()
        stop()
    }
}

/// The services one configuration brings (the source's watches, the push channels): they run
/// together as children of one task group and stop together when a reload replaces them. An
/// unexpected end of any of them is reported through `onFailure` like any other service's.
final class ServiceSet: Sendable {
    let services: [any Service]
    private let stopRequest = Inbox<Void>()
    private let done = Inbox<Void>()

    init(_ services: [any Service]) {
        self.services = services
    }

    /// Runs every service until ``stop()`` (or until the calling task is cancelled).
    func run(onFailure: @escaping @Sendable (String) -> Void) async {
        await withDiscardingTaskGroup { group in
            for service in services {
                group.addTask { await service.supervised(onFailure: onFailure) }
            }
            _ = await stopRequest.next()
            group.cancelAll()
        }
        done.send(())
    }

    /// Retires and stops every service, and returns once all of them have ended.
    func stop() async {
        for service in services { await service.retire() }
        stopRequest.send(())
        _ = await done.next()
    }
}
