import Glibc
import RCCore
import RCStore
import Synchronization

/// The Unix control socket (SPEC §6): newline-delimited JSON, one request → one response, `watch`
/// keeps the connection for events. Each connection gets its own thread with blocking reads and
/// timeouts; a cap bounds how many run at once. Nothing a client sends can crash the daemon.
final class ControlServer: Sendable {
    private let path: String
    private let listener: Int32
    private let agent: Agent
    private let access: PeerAccess
    private let log: Logger
    private let connections = Atomic<Int>(0)

    static let maximumConnections = 64
    /// A connection that sends nothing for this long is closed (watchers are exempt).
    static let idleTimeout: Duration = .seconds(30)
    /// A response that cannot be written in this long (a client that never reads) ends the connection.
    static let sendTimeout: Duration = .seconds(5)

    /// Binds the socket (mode 0660, group `SocketGroup`), replacing a stale socket file.
    init(config: AgentConfig, agent: Agent, log: Logger) throws(SystemError) {
        path = config.socket
        self.agent = agent
        self.log = log
        access = PeerAccess(groupName: config.socketGroup)
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        if slash > path.startIndex { try FileBytes.makeDirectories(String(path[..<slash])) }
        var address = try UnixSocket.address(path, for: "bind")
        // A socket file left by a daemon that died is in the way; a live daemon would answer.
        if UnixSocket.answers(path) {
            throw SystemError("bind \(path) (another rcagentd is running there)", errno: EADDRINUSE)
        }
        let fd = try UnixSocket.stream()
        unlink(path)
        let umaskBefore = umask(0o117)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(umaskBefore)
        guard rc == 0 else {
            let error = SystemError("bind \(path)")
            close(fd)
            throw error
        }
        if let gid = access.groupId, chown(path, uid_t.max, gid) != 0 {
            log.warning(
                "Failed to give \(path) to group \(config.socketGroup ?? ""): \(SystemError("chown")), ignoring")
        }
        guard listen(fd, 128) == 0 else {
            let error = SystemError("listen \(path)")
            close(fd)
            throw error
        }
        listener = fd
    }

    /// Accepts connections on a thread of its own until ``stop()``.
    func start() {
        DetachedThread.start { [self] in acceptLoop() }
    }

    /// Stops accepting and removes the socket file.
    func stop() {
        unlink(path)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    log.warning("Failed to accept a control connection: \(SystemError("accept")), retrying")
                    usleep(100_000)
                    continue
                }
                return  // the listener was closed: shutting down
            }
            UnixSocket.setTimeout(fd, SO_SNDTIMEO, Self.sendTimeout)
            if connections.add(1, ordering: .relaxed).newValue > Self.maximumConnections {
                send(fd, ControlError(.busy, "too many connections (\(Self.maximumConnections)); try again").response)
                finish(fd)
                continue
            }
            let started = DetachedThread.start { [self] in
                serve(fd)
                finish(fd)
            }
            if !started {
                send(fd, ControlError(.busy, "cannot start a connection handler").response)
                finish(fd)
            }
        }
    }

    private func finish(_ fd: Int32) {
        close(fd)
        connections.subtract(1, ordering: .relaxed)
    }

    /// Reads requests line by line and answers each, until the peer closes, idles out or misbehaves.
    private func serve(_ fd: Int32) {
        UnixSocket.setTimeout(fd, SO_RCVTIMEO, Self.idleTimeout)
        let peer = PeerAccess.credentials(of: fd)
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")), newline <= ControlRequest.maximumLineLength {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
                switch respond(to: line, fd: fd, peer: peer) {
                case .keepOpen: continue
                case .close: return
                case .watching:
                    watch(fd)
                    return
                }
            }
            if buffer.count > ControlRequest.maximumLineLength {
                // No newline within the limit (or a line past it): refuse and close, there is no
                // telling where the next request would start.
                send(
                    fd,
                    ControlError(.lineTooLong, "request line longer than \(ControlRequest.maximumLineLength) bytes")
                        .response)
                return
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }  // closed, reset, or idle past the timeout
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    private enum Disposition { case keepOpen, close, watching }

    private func respond(to line: [UInt8], fd: Int32, peer: PeerCredentials?) -> Disposition {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            return send(fd, error.response) ? .keepOpen : .close
        }
        if request.changesState, !access.allows(peer) {
            let who = peer.map { "uid \($0.uid)" } ?? "an unknown peer"
            return send(
                fd,
                ControlError(
                    .permissionDenied,
                    "\(who) may not change the agent's state (needs root, the daemon's user\(access.groupName.map { " or group \($0)" } ?? ""))"
                ).response) ? .keepOpen : .close
        }
        if case .watch = request {
            UnixSocket.setTimeout(fd, SO_RCVTIMEO, .zero)
            let agent = agent
            return blockingWait { await agent.subscribe(fd) } ? .watching : .close
        }
        let agent = agent
        let response = blockingWait { await ControlRequests.answer(request, agent: agent) }
        return send(fd, response) ? .keepOpen : .close
    }

    /// Holds a watch connection until the client closes it (or the agent drops it).
    private func watch(_ fd: Int32) {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
        }
        let agent = agent
        blockingWait { await agent.unsubscribe(fd) }
    }

    @discardableResult
    private func send(_ fd: Int32, _ response: JSONValue) -> Bool {
        UnixSocket.sendAll(fd, Array((response.compactText + "\n").utf8))
    }

}
