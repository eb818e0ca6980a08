import Glibc
import RCCore
import RCSystem

/// The CLI's side of the daemon's control socket: one request line, one response line. Owns the
/// connection: it closes when the client goes out of scope, or at ``close()``.
struct ControlClient: ~Copyable {
    private let fd: FileDescriptor
    private var lines = LineBuffer(maximumLength: ControlClient.maximumLineLength)

    /// What connecting to the daemon's socket came to.
    enum Connection: ~Copyable {
        case connected(ControlClient)
        /// Nothing listens there (no socket file, or a stale one).
        case notRunning
        /// A daemon runs, but this user may not connect (socket mode 0660, not in its group).
        case denied(SystemError)
    }

    private init(fd: consuming FileDescriptor) {
        self.fd = fd
    }

    static func connect(socket path: String) -> Connection {
        do {
            return .connected(ControlClient(fd: try UnixSocket.connect(path)))
        } catch {
            return error.errno == EACCES || error.errno == EPERM ? .denied(error) : .notRunning
        }
    }

    /// What asking the daemon once came to.
    enum Reply<Response: ControlResponse> {
        /// The daemon answered `{"ok":true,...}`.
        case answered(Response)
        /// The daemon answered with an error other than `busy`: it considered the request and said no.
        case refused(ControlError)
        /// A daemon runs but did not take the request: it was busy (every slot taken), closed the
        /// connection, did not answer in time, or answered something unreadable.
        case noAnswer(String)
        /// A daemon runs, but this user may not connect to its socket.
        case denied(SystemError)
        /// Nothing listens on the socket.
        case notRunning
    }

    /// Sends one request on a connection of its own and classifies the outcome, so that a command
    /// can tell "no daemon" from "a daemon that did not answer" (`status`, `mark-stale`).
    static func ask<Response: ControlResponse>(
        _ request: ControlRequest, expecting: Response.Type, socket path: String, timeout: Duration
    ) -> Reply<Response> {
        var client: ControlClient
        switch connect(socket: path) {
        case let .connected(connected): client = connected
        case .notRunning: return .notRunning
        case let .denied(error): return .denied(error)
        }
        let reply: Result<Response, ControlError>
        do {
            reply = try Response.reply(try client.send(request.json, timeout: timeout))
        } catch let error as CLIError {
            return .noAnswer(error.message)
        } catch {
            return .noAnswer("the daemon sent an unreadable response: \(error)")
        }
        switch reply {
        case let .success(response): return .answered(response)
        case let .failure(error) where error.code == .busy: return .noAnswer("busy: \(error.message)")
        case let .failure(error): return .refused(error)
        }
    }

    /// Closes the connection now (it also closes when the client goes out of scope).
    consuming func close() { fd.close() }

    /// Sends `request` and waits up to `timeout` for the response line.
    mutating func send(_ request: JSONValue, timeout: Duration? = nil) throws(CLIError) -> JSONValue {
        UnixSocket.setTimeout(fd.rawValue, SO_RCVTIMEO, timeout ?? .zero)
        guard UnixSocket.sendAll(fd.rawValue, Array((request.compactText + "\n").utf8)) else {
            // A daemon that refuses the connection (`busy`) answers and closes at once, maybe before
            // the request went out: its answer is then already here and says more than EPIPE.
            let error = SystemError("send")
            guard let line = try? readLine(), let response = try? JSONValue.parse(line) else {
                throw .unavailable("cannot send to the daemon: \(error)")
            }
            return response
        }
        guard let line = try readLine() else {
            throw .unavailable("the daemon closed the connection without answering")
        }
        do {
            return try JSONValue.parse(line)
        } catch {
            throw .failure("the daemon sent an unreadable response: \(error)")
        }
    }

    /// The longest response line taken (an activation naming every key of a huge template is the
    /// largest answer): whatever answers at the socket path cannot make the CLI hold unbounded memory.
    static let maximumLineLength = 16 << 20

    /// The next line from the daemon, `nil` at end of stream.
    mutating func readLine() throws(CLIError) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            switch lines.next() {
            case let .line(line): return line
            case .tooLong:
                throw .failure("the daemon sent a response line longer than \(Self.maximumLineLength) bytes")
            case .needMore: break
            }
            let n = Posix.retrying { chunk.withUnsafeMutableBytes { recv(fd.rawValue, $0.baseAddress, $0.count, 0) } }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw .failure("timed out waiting for the daemon")
            }
            if n <= 0 { return nil }
            lines.append(chunk[0..<n])
        }
    }

}

extension Invocation {
    /// A connection to the daemon, or exit 69 when it does not run or this user may not reach it.
    func daemon() throws(CLIError) -> ControlClient {
        let config = try config()
        switch ControlClient.connect(socket: config.socket) {
        case let .connected(client):
            return client
        case .notRunning:
            throw .unavailable("the daemon is not running (no answer on \(config.socket))")
        case let .denied(error):
            let group =
                config.socketGroup.map { " (root, the daemon's user and members of group \($0) may)" }
                ?? " (root and the daemon's user may)"
            throw .unavailable("not allowed to talk to the daemon: \(error)\(group)")
        }
    }

    /// Sends one request and returns the `ok` response, decoded, with the line it came in (for
    /// `--json`, which prints the daemon's answer as it is); a refusal becomes exit 1 with its message.
    func request<Response: ControlResponse>(
        _ request: ControlRequest, expecting: Response.Type, timeout: Duration? = nil
    ) throws(CLIError) -> DaemonAnswer<Response> {
        var client = try daemon()
        let json = try client.send(request.json, timeout: timeout)
        return DaemonAnswer(response: try Self.decode(json, as: Response.self), json: json)
    }

    /// The response in `json`, or the daemon's refusal as exit 1.
    static func decode<Response: ControlResponse>(_ json: JSONValue, as: Response.Type) throws(CLIError)
        -> Response
    {
        let reply: Result<Response, ControlError>
        do { reply = try Response.reply(json) } catch {
            throw .failure("the daemon sent an unreadable response: \(error)")
        }
        switch reply {
        case let .success(response): return response
        case let .failure(error): throw .failure(error.message)
        }
    }
}

/// A decoded answer and the JSON it was read from.
struct DaemonAnswer<Response: ControlResponse> {
    let response: Response
    let json: JSONValue
}
