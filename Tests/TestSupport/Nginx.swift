import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real nginx serving one directory on a free loopback port, as a CDN edge or an ordinary web
/// server would serve a config document: static files with nginx's own ETags and conditional
/// requests. It is the test's child (`daemon off`, its pid file, logs and temp paths in
/// `directory`), never the system's nginx service, and is stopped with its worker by its process
/// group. Every request is one line of `access.log`, so a test counts what each agent asked for.
public final class Nginx {
    /// One line of the access log.
    public struct Request: Sendable, Equatable {
        public let status: Int
        /// The path with its query, as the client sent it (a fleet tells its agents apart by a query).
        public let uri: String
        /// The `If-None-Match` the client sent, empty when it sent none.
        public let ifNoneMatch: String
    }

    public let port: Int
    public let directory: URL
    /// What nginx serves: `http://127.0.0.1:<port>/<name>` is `documents/<name>`.
    public let documents: URL
    public var accessLog: String { directory.appendingPathComponent("access.log").path }
    private var server: Subprocess?
    /// The modification time the last served file got (see ``serve(_:as:)``).
    private var lastModified = time(nil)

    public init(in directory: URL) throws {
        self.directory = directory
        documents = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        port = try Mosquitto.freePort()
        let path = directory.path
        // `user root`: a master started as root would run its worker as nobody, which cannot read
        // the test's private directory (ignored, with a warning, when the tests do not run as root).
        // The log format puts the status first and the If-None-Match in quotes (nginx escapes
        // quotes inside as \x22, so a line always splits the same way).
        let config = """
            master_process on;
            worker_processes 1;
            user root;
            pid \(path)/nginx.pid;
            error_log \(path)/error.log warn;
            worker_rlimit_nofile 8192;
            events { worker_connections 4096; }
            http {
                log_format fleet '$status $request_method $request_uri "$http_if_none_match"';
                access_log \(path)/access.log fleet;
                client_body_temp_path \(path)/temp/body;
                proxy_temp_path \(path)/temp/proxy;
                fastcgi_temp_path \(path)/temp/fastcgi;
                uwsgi_temp_path \(path)/temp/uwsgi;
                scgi_temp_path \(path)/temp/scgi;
                types { application/json json; }
                default_type application/octet-stream;
                server {
                    listen 127.0.0.1:\(port);
                    root \(documents.path);
                }
            }

            """
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("temp"), withIntermediateDirectories: true)
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: accessLog, contents: nil) else {
            throw TestFailure("cannot create \(accessLog)")
        }
        try start()
    }

    deinit { stop() }

    /// Starts nginx (again) and returns once it accepts connections.
    public func start() throws {
        let path = directory.path
        // -e: the error log before the config is read (the default, /var/log/nginx, is the system's).
        server = try Subprocess(
            "/usr/sbin/nginx", ["-p", path, "-e", path + "/error.log", "-c", path + "/nginx.conf", "-g", "daemon off;"])
        guard eventually(10, { Mosquitto.accepts(port: port) }) else {
            let log = (try? String(contentsOfFile: path + "/error.log", encoding: .utf8)) ?? ""
            stop()
            throw TestFailure("nginx did not start: \(log)")
        }
    }

    /// Stops the master and its worker at once (SIGKILL to the process group the launcher gave it:
    /// a master killed alone would leave its worker holding the port).
    public func stop() {
        guard let server else { return }
        kill(-server.pid, SIGKILL)
        _ = server.finish(bound: .seconds(10))
        self.server = nil
    }

    /// Replaces `name` with `contents` atomically (written beside it, then renamed over it), so a
    /// request sees the old document or the new one, never half of one. nginx's ETag is the file's
    /// modification time (whole seconds) and size: two versions of equal size written in the same
    /// second would share one, and an agent holding the first would be told "not modified". Each
    /// version therefore gets a modification time at least one second after the previous one.
    public func serve(_ contents: String, as name: String = "config.json") throws {
        let target = documents.appendingPathComponent(name).path
        let temporary = target + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(contents.utf8)) else {
            throw TestFailure("cannot write \(temporary)")
        }
        lastModified = max(time(nil), lastModified + 1)
        var times = [
            timespec(tv_sec: lastModified, tv_nsec: 0), timespec(tv_sec: lastModified, tv_nsec: 0),
        ]
        guard utimensat(AT_FDCWD, temporary, &times, 0) == 0, rename(temporary, target) == 0 else {
            throw TestFailure("cannot replace \(target): errno \(errno)")
        }
    }

    /// The URL of `name`, with `query` (e.g. `agent=3`) when given: nginx serves the file whatever
    /// the query, and logs it, which is how requests are counted per agent.
    public func url(_ name: String = "config.json", query: String? = nil) -> String {
        "http://127.0.0.1:\(port)/\(name)" + (query.map { "?" + $0 } ?? "")
    }

    /// Every request nginx has logged so far, oldest first.
    public var requests: [Request] {
        let text = (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 3)
            guard fields.count == 4, let status = Int(fields[0]) else { return nil }
            return Request(
                status: status, uri: String(fields[2]), ifNoneMatch: String(fields[3].dropFirst().dropLast()))
        }
    }
}
