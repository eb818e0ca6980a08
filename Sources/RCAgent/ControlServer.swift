import CLinux
import Glibc
import RCCore
import RCService
import RCStore
import RCSystem
import Synchronization

/// The Unix control socket: newline-delimited JSON, one request → one response, `watch`
/// keeps the connection for events. Each connection gets its own thread; ``ControlConnections``
/// bounds how many run at once and keeps room for the owner. Nothing a client sends can crash the
/// daemon, and no client can hold a slot for long without sending whole requests.
final class ControlServer: Sendable {
    private let socket: SocketFile
    private let requests: ControlRequests
    private var agent: Agent { requests.agent }
    private let access: PeerAccess
    private let log: Logger
    /// Set by ``stop()``: the listener's end is then expected, not a failure.
    private let stopped = Atomic<Bool>(false)
    private let connections = ControlConnections(
        capacity: maximumConnections, reserve: reservedConnections, watcherCapacity: maximumWatchers,
        watcherReserve: reservedWatchers)

    static let maximumConnections = 64
    /// Slots only peers that may change state (root, the daemon's user, `SocketGroup`) can take.
    static let reservedConnections = 16
    static let maximumWatchers = 32
    static let reservedWatchers = 8
    /// A request line must be complete (its newline received) this long after its first byte: a
    /// total, so a client that drips a byte at a time cannot stretch it.
    static let lineDeadline: Duration = .seconds(5)
    /// A connection on which no request starts for this long is closed (watchers are exempt).
    static let idleTimeout: Duration = .seconds(30)
    /// A response that cannot be written in this long (a client that never reads) ends the connection.
    static let sendTimeout: Duration = .seconds(5)

    /// Binds the socket (mode 0660, group `SocketGroup`), replacing a stale socket file.
    init(config: AgentConfig, requests: ControlRequests, log: Logger) throws(SystemError) {
        self.requests = requests
        self.log = log
        access = PeerAccess(groupName: config.socketGroup)
        socket = try SocketFile(path: config.socket, groupId: access.groupId, groupName: config.socketGroup, log: log)
    }

    /// Accepts connections on a thread of its own until ``stop()``. Should accepting fail for any
    /// other reason, `onFailure` is told why: a daemon whose socket is dead must not go on answering
    /// the watchdog as if it were well.
    func start(onFailure: @escaping @Sendable (String) -> Void) throws(SystemError) {
        guard DetachedThread.start({ [self] in acceptLoop(onFailure: onFailure) }) else {
            throw SystemError("start the control socket's thread", errno: EAGAIN)
        }
    }

    /// Stops accepting and removes the socket file. The shutdown wakes the accept thread, which then
    /// ends; the listening descriptor closes with the ``SocketFile`` once that thread has let go of
    /// it, so the thread never calls accept() on a number the kernel has given to something else.
    func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        socket.remove()
        shutdown(socket.listener.rawValue, Int32(SHUT_RDWR))
    }

    /// The accept thread: hands each connection to a thread of its own (or refuses it when no slot is
    /// free), until ``stop()`` shuts the listener down or accept fails in a way that will not pass.
    private func acceptLoop(onFailure: @Sendable (String) -> Void) {
        while true {
            // accept4(SOCK_CLOEXEC): with accept() then fcntl(FD_CLOEXEC), a hook spawned in between
            // inherited the client's descriptor.
            guard
                let connection = FileDescriptor(
                    returnedBy: Posix.retrying { rcagent_accept_cloexec(socket.listener.rawValue) })
            else {
                if errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    log.warning("Failed to accept a control connection: \(SystemError("accept")), retrying")
                    usleep(100_000)
                    continue
                }
                // The listener shut down by stop(), or something else: then the socket is dead.
                if !stopped.load(ordering: .sequentiallyConsistent) {
                    onFailure("Failed to accept control connections: \(SystemError("accept"))")
                }
                return
            }
            UnixSocket.setTimeout(connection.rawValue, SO_SNDTIMEO, Self.sendTimeout)
            let peer = PeerAccess.credentials(of: connection.rawValue)
            let id: Int
            switch connections.admit(connection.rawValue, privileged: access.allows(peer)) {
            case let .admitted(admitted): id = admitted
            case let .refused(reason):
                send(connection.rawValue, ControlError(.busy, reason).json)
                connection.close()
                continue
            }
            // Handed to the connection's thread, which owns it from its first line; should the
            // thread not start, it comes back here.
            let fd = connection.release()
            let started = DetachedThread.start { [self] in
                let connection = FileDescriptor(fd)
                serve(connection.rawValue, id: id, peer: peer)
                finish(connection, id: id)
            }
            if !started {
                let connection = FileDescriptor(fd)
                send(connection.rawValue, ControlError(.busy, "cannot start a connection handler").json)
                finish(connection, id: id)
            }
        }
    }

    /// Frees the connection's slot, then closes it (in that order: see ``ControlConnections/remove(_:)``).
    private func finish(_ connection: consuming FileDescriptor, id: Int) {
        connections.remove(id)
        connection.close()
    }

    /// Reads requests line by line and answers each, until the peer closes, idles out, misses the
    /// line deadline, misbehaves or is evicted.
    private func serve(_ fd: Int32, id: Int, peer: PeerCredentials?) {
        var lines = LineBuffer(maximumLength: ControlRequest.maximumLineLength)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        // When the first byte of the line being read arrived (or the answer before it was sent):
        // the deadline runs from there, however the bytes trickle in.
        var lineStarted: ContinuousClock.Instant?
        while true {
            switch lines.next() {
            case let .line(line):
                if !line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) {
                    connections.enter(id, .handling)
                    switch respond(to: line, fd: fd, id: id, peer: peer) {
                    case .keepOpen: break
                    case .close: return
                    case .watching:
                        watch(fd)
                        return
                    }
                }
                lineStarted = lines.hasPartialLine ? .now : nil
                continue
            case .tooLong:
                // No newline within the limit (or a line past it): refuse and close, there is no
                // telling where the next request would start.
                send(
                    fd,
                    ControlError(.lineTooLong, "request line longer than \(ControlRequest.maximumLineLength) bytes")
                        .json)
                return
            case .needMore: break
            }
            connections.enter(id, lineStarted == nil ? .idle : .reading)
            let wait = lineStarted.map { Self.lineDeadline - (ContinuousClock.now - $0) } ?? Self.idleTimeout
            guard wait > .zero, UnixSocket.waitReadable(fd, wait) else {
                // Out of time. A half-sent line is told why; an idle connection just ends.
                if lineStarted != nil {
                    send(
                        fd,
                        ControlError(
                            .timeout,
                            "request line not complete within \(Self.lineDeadline.milliseconds / 1_000) s of its first byte"
                        ).json)
                }
                return
            }
            let n = Posix.retrying { chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
            if n < 0 && errno == EAGAIN { continue }
            if n <= 0 {
                // Closed or reset by the peer, or shut down by an eviction (then say why).
                if connections.wasEvicted(id) {
                    send(
                        fd,
                        ControlError(.busy, "connection closed to make room for a peer that may change state")
                            .json)
                }
                return
            }
            if !lines.hasPartialLine { lineStarted = .now }
            lines.append(chunk[0..<n])
        }
    }

    private enum Disposition { case keepOpen, close, watching }

    /// Parses one request line, checks that the peer may ask it, and answers it; a `watch` hands the
    /// connection to the agent's subscribers instead.
    private func respond(to line: [UInt8], fd: Int32, id: Int, peer: PeerCredentials?) -> Disposition {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            return send(fd, error.json) ? .keepOpen : .close
        }
        if request.changesState, !access.allows(peer) {
            let who = peer.map { "uid \($0.uid)" } ?? "an unknown peer"
            return send(
                fd,
                ControlError(
                    .permissionDenied,
                    "\(who) may not change the agent's state (needs root, the daemon's user\(access.groupName.map { " or group \($0)" } ?? ""))"
                ).json) ? .keepOpen : .close
        }
        if case .watch = request {
            if let refusal = connections.startWatching(id) {
                return send(fd, ControlError(.busy, refusal).json) ? .keepOpen : .close
            }
            let agent = agent
            return blockingWait { await agent.subscribe(fd) } ? .watching : .close
        }
        return send(fd, requests.answer(request)) ? .keepOpen : .close
    }

    /// Holds a watch connection until the client closes it (or the agent drops it).
    private func watch(_ fd: Int32) {
        var byte: UInt8 = 0
        while Posix.retrying({ recv(fd, &byte, 1, 0) }) > 0 {}
        let agent = agent
        blockingWait { await agent.unsubscribe(fd) }
    }

    @discardableResult
    /// Writes one response line; `false` when the peer is gone or does not read (the send timeout).
    private func send(_ fd: Int32, _ response: JSONValue) -> Bool {
        var line: [UInt8] = []
        response.write(toBytes: &line)
        line.append(UInt8(ascii: "\n"))
        return UnixSocket.sendAll(fd, line)
    }

}
