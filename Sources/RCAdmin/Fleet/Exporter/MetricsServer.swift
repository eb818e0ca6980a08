internal import CLazyLibraries
internal import CMicroHTTPD
import Dispatch
import Glibc
import RCCore
import Synchronization

/// The fleet exporter's HTTP server: libmicrohttpd (Debian's libmicrohttpd12, loaded on first use)
/// on a socket bound here, answering `GET /metrics` with the page `page` renders, `GET /` with a
/// short text, 404 for any other path and 405 for any other method.
///
/// One thread, libmicrohttpd's own, runs every connection through `poll` (its "internal polling
/// thread" mode), rather than a thread per connection: a client that opens a connection and sends
/// nothing, or a byte a minute, costs a descriptor and ``Limits/memoryPerConnection`` bytes, never
/// a thread, so a scrape is answered while it waits. What hostile clients can hold is bounded:
/// ``Limits/connections`` connections at once (more wait in the kernel's listen queue until one
/// ends), each closed after ``Limits/idleTimeout`` without progress, each request's headers within
/// ``Limits/memoryPerConnection`` (libmicrohttpd answers larger ones with 431, a garbled one with
/// 400, and closes). A request body is never read. Progress resets libmicrohttpd's timeout, so a
/// client dripping a byte every few seconds would hold its connection for a day: each request
/// must also be answered within ``Limits/requestDeadline`` of its connection's start (or of the
/// answer before it on that connection), or a watchdog shuts the connection down. A client that
/// keeps all the connections busy delays a scrape by that deadline at most each time it fills
/// them again: which is why the exporter belongs on localhost or behind a proxy that authenticates. The page itself is
/// rendered from what the exporter keeps ready and sent from where it lies (``PageBytes``), so an
/// answer copies nothing however many connections are sending it.
final class MetricsServer: Sendable {
    struct Limits: Sendable {
        var connections = 128
        /// Seconds a connection may sit idle (headers unfinished, nothing read) before it is closed.
        var idleTimeout = 10
        var memoryPerConnection = 32 << 10
        /// Seconds from a connection's start (or its previous answer's end) to the end of its
        /// request's answer, however slowly it is sent or read.
        var requestDeadline = 30
    }

    /// What the requests are answered with; handed to libmicrohttpd's thread as its context.
    private final class Handler: Sendable {
        let page: @Sendable () -> [PageBytes]
        let requestDeadline: Duration
        /// Each open connection's descriptor and when its request must have been answered. An
        /// entry goes when libmicrohttpd reports the connection closed, before it closes the
        /// descriptor: the watchdog never shuts down a descriptor the number was reused for.
        let deadlines = Mutex<[Int32: ContinuousClock.Instant]>([:])

        init(page: @escaping @Sendable () -> [PageBytes], requestDeadline: Duration) {
            self.page = page
            self.requestDeadline = requestDeadline
        }

        /// Shuts down the connections past their deadline (libmicrohttpd then closes them).
        func shutDownLate() {
            let now = ContinuousClock.now
            deadlines.withLock { table in
                for (fd, deadline) in table where deadline <= now {
                    _ = shutdown(fd, Int32(SHUT_RDWR))
                    table[fd] = now + .seconds(3600)
                }
            }
        }
    }

    /// The running daemon: handed between threads only to be stopped, once (under the lock).
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
        /// Ticks every second to shut down the connections past ``Limits/requestDeadline``.
        let watchdog: DispatchSourceTimer
    }

    /// The address the socket is bound to, its port as the kernel gave it (`127.0.0.1:9800`).
    let address: String
    private let daemon = Mutex<Daemon?>(nil)
    private let handler: Handler

    /// Binds `listen` and starts serving. Throws a failure naming the address when the library is
    /// missing, the address cannot be bound (in use, not this host's) or the server cannot start.
    init(listen: ListenAddress, limits: Limits = Limits(), page: @escaping @Sendable () -> [PageBytes])
        throws(AdminFailure)
    {
        if let problem = rc_lazy_require(RC_LAZY_MICROHTTPD) {
            throw .failure("the fleet exporter needs \(String(cString: problem))")
        }
        let (fd, port) = try Self.bind(listen)
        address = ListenAddress.text(host: listen.host, port: port, family: listen.family)
        handler = Handler(page: page, requestDeadline: .seconds(limits.requestDeadline))
        let context = Unmanaged.passUnretained(handler).toOpaque()
        // The handler outlives the daemon: `stop()` (or deinit) stops the daemon, and with it every
        // call into `answer`, before `handler` is released.
        // `poll`, not epoll: with epoll (libmicrohttpd 0.9.75) a connection made just after all
        // the connections were cut went unanswered until the 10 s idle timeout woke the thread,
        // in 3 of 24 runs of drippingClientsAreCutAtTheRequestDeadline under load (none of 24
        // with poll). At 128 connections at most, one poll over all of them costs nothing.
        let started = rc_mhd_start(
            MHD_USE_POLL_INTERNAL_THREAD.rawValue, fd, UInt32(limits.connections), UInt32(limits.idleTimeout),
            limits.memoryPerConnection, Self.answer, context, Self.connectionChanged, Self.requestCompleted)
        guard let started else {
            close(fd)
            throw .failure("cannot start the HTTP server on \(address)")
        }
        let watchdog = DispatchSource.makeTimerSource(queue: .global())
        watchdog.schedule(deadline: .now() + 1, repeating: 1)
        watchdog.setEventHandler { [handler] in handler.shutDownLate() }
        watchdog.resume()
        daemon.withLock { $0 = Daemon(pointer: started, watchdog: watchdog) }
    }

    deinit { stop() }

    /// Stops serving: closes the listening socket and every connection, and waits for the
    /// server's thread to end (at once: it never waits on a client).
    func stop() {
        let running = daemon.withLock { daemon in
            defer { daemon = nil }
            return daemon
        }
        guard let running else { return }
        running.watchdog.cancel()
        MHD_stop_daemon(running.pointer)
    }

    /// A socket bound to `listen` and listening, non-blocking, close-on-exec; and its port.
    private static func bind(_ listen: ListenAddress) throws(AdminFailure) -> (Int32, UInt16) {
        let shown = listen.text
        func failure(_ what: String) -> AdminFailure {
            .failure("cannot listen on \(shown): \(what): \(String(cString: strerror(errno)))")
        }
        let domain = listen.family == .v6 ? AF_INET6 : AF_INET
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var one: Int32 = 1
        // A restarted exporter binds again at once, while the last one's connections linger in TIME_WAIT.
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if listen.family == .v6 {
            // [::] means IPv6 only, as written, whatever the system's bindv6only default.
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        var storage = sockaddr_storage()
        /// Copies a filled-in address into `storage`; its size is the length `bind` takes.
        func store<Address>(_ address: Address) -> socklen_t {
            withUnsafeBytes(of: address) { bytes in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
            }
            return socklen_t(MemoryLayout<Address>.size)
        }
        let length: socklen_t
        if listen.family == .v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = listen.port.bigEndian
            _ = inet_pton(AF_INET6, listen.host, &address.sin6_addr)
            length = store(address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = listen.port.bigEndian
            _ = inet_pton(AF_INET, listen.host, &address.sin_addr)
            length = store(address)
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let error = failure("bind")
            close(fd)
            throw error
        }
        guard Glibc.listen(fd, 128) == 0, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
            let error = failure("listen")
            close(fd)
            throw error
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        let port =
            listen.family == .v6
            ? withUnsafeBytes(of: actual) { $0.load(as: sockaddr_in6.self).sin6_port }
            : withUnsafeBytes(of: actual) { $0.load(as: sockaddr_in.self).sin_port }
        return (fd, UInt16(bigEndian: port))
    }

    /// libmicrohttpd's access handler: called on its thread once a request's headers are in.
    private static let answer: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, _, _, _ in
        guard let context, let connection else { return .NO }
        let handler = Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue()
        let method = method.map { String(cString: $0) } ?? ""
        let path = url.map { String(cString: $0) } ?? ""
        // HEAD is answered as GET without the body (libmicrohttpd leaves it out).
        guard method == "GET" || method == "HEAD" else {
            return respond(connection, 405, "Only GET and HEAD are served here.\n", extra: [("Allow", "GET, HEAD")])
        }
        switch path {
        case "/metrics":
            return respond(connection, 200, handler.page(), contentType: PrometheusText.contentType)
        case "/":
            return respond(
                connection, 200,
                "rcadmin fleet exporter: the fleet's aggregates from its agents' retained reports.\n"
                    + "Metrics: /metrics\n")
        default:
            return respond(connection, 404, "Not found: this exporter serves /metrics.\n")
        }
    }

    /// libmicrohttpd's connection notifications: a connection's deadline starts with it (its
    /// descriptor kept in its socket context, for the close) and ends with it.
    private static let connectionChanged: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
        guard let context, let connection, let socketContext else { return }
        let handler = Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue()
        switch code {
        case .CONNECTION_NOTIFY_STARTED:
            let fd = rc_mhd_connection_fd(connection)
            guard fd >= 0 else { return }
            socketContext.pointee = UnsafeMutableRawPointer(bitPattern: Int(fd) + 1)
            handler.deadlines.withLock { $0[fd] = .now + handler.requestDeadline }
        case .CONNECTION_NOTIFY_CLOSED:
            guard let stored = socketContext.pointee else { return }
            handler.deadlines.withLock { _ = $0.removeValue(forKey: Int32(Int(bitPattern: stored) - 1)) }
        default: break
        }
    }

    /// A request answered (or ended): the next one on a kept-alive connection gets a deadline anew.
    private static let requestCompleted: MHD_RequestCompletedCallback = { context, connection, _, _ in
        guard let context, let connection else { return }
        let handler = Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue()
        let fd = rc_mhd_connection_fd(connection)
        handler.deadlines.withLock { table in
            if table[fd] != nil { table[fd] = .now + handler.requestDeadline }
        }
    }

    private static func respond(
        _ connection: OpaquePointer, _ status: UInt32, _ body: String,
        contentType: String = "text/plain; charset=utf-8", extra: [(String, String)] = []
    ) -> MHD_Result {
        respond(connection, status, [PageBytes(body)], contentType: contentType, extra: extra)
    }

    /// Answers with `parts` sent in place, one after the other: the response holds a reference to
    /// them until libmicrohttpd has sent the last byte (or dropped the connection) and calls
    /// ``releaseParts``.
    private static func respond(
        _ connection: OpaquePointer, _ status: UInt32, _ parts: [PageBytes],
        contentType: String = "text/plain; charset=utf-8", extra: [(String, String)] = []
    ) -> MHD_Result {
        let held = Unmanaged.passRetained(HeldParts(parts))
        let vectors = parts.map { MHD_IoVec(iov_base: UnsafeRawPointer($0.base), iov_len: $0.count) }
        let response = MHD_create_response_from_iovec(
            vectors, UInt32(vectors.count), releaseParts, held.toOpaque())
        guard let response else {
            held.release()
            return .NO
        }
        defer { MHD_destroy_response(response) }
        _ = MHD_add_response_header(response, "Content-Type", contentType)
        for (name, value) in extra { _ = MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, status, response)
    }

    /// The parts one response sends, kept alive until libmicrohttpd is done with them.
    private final class HeldParts {
        let parts: [PageBytes]
        init(_ parts: [PageBytes]) { self.parts = parts }
    }

    /// libmicrohttpd's callback when a response is destroyed: its parts may go.
    private static let releaseParts: MHD_ContentReaderFreeCallback = { held in
        guard let held else { return }
        Unmanaged<HeldParts>.fromOpaque(held).release()
    }
}
