import Glibc
import RCCore
import RCStore
import RCSystem

/// `rcagent doctor`: one line per check of what a device needs; exit 0 when all pass, 1 otherwise.
enum DoctorCommand {
    static let spec = CommandSpec(
        "doctor", summary: "Check config, database, socket, daemon, clock, source and hooks; one line per check.",
        options: [.flag("json", "print the checks as one JSON document")], run: run)

    struct Check {
        let name: String
        let ok: Bool
        let detail: String
        /// Worth a look but not a fault: printed as `warn`, and `doctor` still exits 0.
        var warning = false
    }

    /// The day this version was made: a clock before it is certainly wrong.
    static let buildDate = Timestamp(iso8601: "2026-11-29T00:00:00Z")!

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        var checks: [Check] = []
        let config: AgentConfig
        do {
            config = try AgentConfig.load(
                explicitPath: invocation.arguments.value("config"), environment: invocation.environment)
            try config.validateSource()
            let warnings = config.warnings.map(\.description)
            checks.append(
                Check(
                    // An unknown key or section is a typo until shown otherwise: the setting it was
                    // meant to be is not applied (a `[source]` leaves the daemon without a source).
                    name: "config", ok: warnings.isEmpty,
                    detail: (config.files.isEmpty ? "built-in defaults" : config.files.joined(separator: ", "))
                        + (warnings.isEmpty ? "" : "; " + warnings.joined(separator: "; "))))
        } catch {
            checks.append(
                Check(
                    name: "config", ok: false, detail: error.description.split(separator: "\n").joined(separator: "; "))
            )
            return report(checks, json: invocation.json)
        }
        var status: StoreStatus?
        var activation: DoctorFindings.Activation?
        checks.append(database(config, status: &status, activation: &activation))
        checks.append(contentsOf: daemon(config, invocation: invocation))
        checks.append(clock(status))
        checks.append(source(config))
        checks.append(DoctorFindings.libraries(config))
        if let fetch = DoctorFindings.lastFetch(status, now: .now()) { checks.append(fetch) }
        checks.append(contentsOf: DoctorFindings.activation(activation, now: .now()))
        if let signatures = SignedDocumentStatus.check(config, now: .now()) { checks.append(signatures) }
        if let metrics = DoctorFindings.metrics(config, now: .now()) { checks.append(metrics) }
        checks.append(hooks(config))
        return report(checks, json: invocation.json)
    }

    /// The state database's integrity; for a user who may not read it (it is private to the daemon),
    /// the reader file's, which is what this user's commands read.
    static func database(
        _ config: AgentConfig, status: inout StoreStatus?, activation: inout DoctorFindings.Activation?
    ) -> Check {
        let path = config.databasePath
        if access(path, R_OK) != 0 && errno == EACCES {
            return readerFile(config, status: &status, activation: &activation)
        }
        do {
            guard let store = try StateStore.openForReading(path: path) else {
                return Check(name: "database", ok: true, detail: "\(path) not created yet (the daemon has not run)")
            }
            if let problems = try store.integrityProblems() {
                return Check(name: "database", ok: false, detail: "\(path): integrity check failed: \(problems)")
            }
            status = try store.status()
            activation = DoctorFindings.Activation.read(store)
            return Check(
                name: "database", ok: true, detail: "\(path): integrity ok, schema \(StateStore.schemaVersion)")
        } catch {
            return Check(name: "database", ok: false, detail: "\(path): \(error)")
        }
    }

    static func readerFile(
        _ config: AgentConfig, status: inout StoreStatus?, activation: inout DoctorFindings.Activation?
    ) -> Check {
        let path = StateStore.readerPath(forDatabase: config.databasePath)
        let privately = "\(config.databasePath) is private to the daemon"
        do {
            guard let store = try StateStore.openReaderFile(path: path) else {
                return Check(
                    name: "database", ok: false,
                    detail: "\(privately), and \(path) is not written yet (start the daemon)")
            }
            if let problems = try store.integrityProblems() {
                return Check(name: "database", ok: false, detail: "\(path): integrity check failed: \(problems)")
            }
            status = try store.status()
            activation = DoctorFindings.Activation.read(store)
            return Check(name: "database", ok: true, detail: "\(privately); \(path): integrity ok")
        } catch {
            return Check(name: "database", ok: false, detail: "\(privately); \(path): \(error)")
        }
    }

    static func daemon(_ config: AgentConfig, invocation: Invocation) -> [Check] {
        switch ControlClient.connect(socket: config.socket) {
        case let .connected(client):
            client.close()
            let socket = Check(name: "socket", ok: true, detail: "\(config.socket) accepts connections")
            guard
                let status = try? invocation.request(.status, expecting: StatusResponse.self, timeout: .seconds(5))
                    .response
            else {
                return [socket, Check(name: "daemon", ok: false, detail: "connected, but no answer to status")]
            }
            let push = status.push.map { "; \($0)" } ?? ""
            let running = "running (pid \(status.pid), \(status.state))\(push)"
            if let digest = status.config, digest != config.digest {
                return [
                    socket,
                    Check(
                        name: "daemon", ok: false,
                        detail:
                            "\(running), with another config than the files say: run `rcagent reload` "
                            + "(a setting it says waits for a restart needs the daemon restarted)"),
                ]
            }
            return [socket, Check(name: "daemon", ok: true, detail: running)]
        case let .denied(error):
            // Who may: root, the daemon's user, and the socket's group, which this user can join.
            let join = config.socketGroup.map { group in
                "; add this user to its group (as root: adduser \(userName()) \(group); then log in again)"
            }
            return [
                Check(
                    name: "socket", ok: false,
                    detail: "\(config.socket): \(error): this user may not talk to the daemon" + (join ?? "")),
                Check(name: "daemon", ok: false, detail: "not reachable by this user (the socket refuses it)"),
            ]
        case .notRunning:
            return [
                Check(name: "socket", ok: false, detail: "nothing answers on \(config.socket)"),
                Check(name: "daemon", ok: false, detail: "not running"),
            ]
        }
    }

    /// This user's login name, or its uid when it has none.
    static func userName() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "\(geteuid())" }
        return String(cString: name)
    }

    static func clock(_ status: StoreStatus?) -> Check {
        let now = Timestamp.now()
        if now < buildDate {
            return Check(
                name: "clock", ok: false,
                detail: "\(now.iso8601) is before this build (\(buildDate.iso8601)): the clock is wrong")
        }
        // A successful fetch "in the future" means the clock jumped back since.
        if let success = status?.lastSuccess, success > now + .seconds(300) {
            return Check(
                name: "clock", ok: false,
                detail: "\(now.iso8601) is before the last successful fetch (\(success.iso8601)): the clock went back")
        }
        return Check(name: "clock", ok: true, detail: now.iso8601)
    }

    static func source(_ config: AgentConfig) -> Check {
        switch config.sourceType {
        case .file:
            guard let path = config.sourcePath else {
                return Check(name: "source", ok: false, detail: "no source configured ([Source] Path=)")
            }
            return access(path, R_OK) == 0
                ? Check(name: "source", ok: true, detail: "file \(path) readable")
                : Check(name: "source", ok: false, detail: "file \(path): \(String(cString: strerror(errno)))")
        case .http, .firebase:
            let url =
                config.sourceType == .http
                ? (config.endpoint.flatMap { URLText.origin(of: $0).map(String.init) } ?? config.sourceURL ?? "")
                : (config.endpoint ?? "https://firebaseremoteconfig.googleapis.com")
            guard let (host, port) = hostAndPort(url) else {
                return Check(name: "source", ok: false, detail: "cannot read a host from \(url)")
            }
            return tcpReachable(host: host, port: port)
                .map { Check(name: "source", ok: false, detail: "\(host):\(port): \($0)") }
                ?? Check(name: "source", ok: true, detail: "\(host):\(port) accepts connections")
        }
    }

    /// The hooks the daemon will run. A missing directory is fine (no hooks) but said as such; a
    /// non-executable file is only a warning: the daemon skips it as run-parts does, by design
    /// (that is how a hook is switched off), so the device is healthy either way.
    static func hooks(_ config: AgentConfig) -> Check {
        let directory = config.hooksDirectory
        var info = stat()
        guard stat(directory, &info) == 0 else {
            let why = String(cString: strerror(errno))
            if errno == ENOENT {
                return Check(name: "hooks", ok: true, detail: "\(directory) does not exist: no hooks run")
            }
            return Check(name: "hooks", ok: false, detail: "\(directory): \(why)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return Check(name: "hooks", ok: false, detail: "\(directory) is not a directory")
        }
        // The names the daemon's HookRunner ignores (RCAgent, which the CLI does not link).
        let names = FileBytes.directoryEntries(directory).filter { name in
            !name.hasPrefix(".") && !name.hasSuffix("~") && !(name.hasPrefix("#") && name.hasSuffix("#"))
                && ![".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-tmp", ".swp", ".bak", ".orig", ".rej"]
                    .contains(where: name.hasSuffix)
        }.sorted()
        let notExecutable = names.filter { access(directory + "/" + $0, X_OK) != 0 }
        let executable = names.filter { !notExecutable.contains($0) }
        let runs = executable.isEmpty ? "none in \(directory)" : executable.joined(separator: ", ")
        if !notExecutable.isEmpty {
            return Check(
                name: "hooks", ok: true,
                detail: "\(runs); not executable, so skipped: \(notExecutable.joined(separator: ", "))",
                warning: true)
        }
        return Check(name: "hooks", ok: true, detail: runs)
    }

    static func hostAndPort(_ url: String) -> (String, Int32)? {
        guard let origin = URLText.origin(of: url) else { return nil }
        let tls = origin.hasPrefix("https://")
        let authority = origin.dropFirst(tls ? 8 : 7)
        if let colon = authority.lastIndex(of: ":"), let port = Int32(authority[authority.index(after: colon)...]) {
            return (String(authority[..<colon]), port)
        }
        return (String(authority), tls ? 443 : 80)
    }

    /// `nil` when a TCP connection to `host:port` opens within 5 s, else why not.
    static func tcpReachable(host: String, port: Int32) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { return "cannot resolve: \(String(cString: gai_strerror(rc)))" }
        defer { freeaddrinfo(list) }
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            if let fd = FileDescriptor(
                returnedBy: socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol))
            {
                UnixSocket.setTimeout(fd.rawValue, SO_SNDTIMEO, .seconds(5))
                let ok = connect(fd.rawValue, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
                reason = ok ? "" : String(cString: strerror(errno))
                fd.close()
                if ok { return nil }
            }
            entry = info.pointee.ai_next
        }
        return reason
    }

    static func report(_ checks: [Check], json: Bool) -> Int32 {
        let allOK = checks.allSatisfy(\.ok)
        if json {
            let items = checks.map {
                JSONValue.object([
                    ("check", .string($0.name)), ("ok", .bool($0.ok)), ("warning", .bool($0.warning)),
                    ("detail", .string($0.detail)),
                ])
            }
            Output.raw(JSONValue.object([("ok", .bool(allOK)), ("checks", .array(items))]).compactText + "\n")
        } else {
            Output.out(
                checks.map {
                    TerminalText(verbatim: !$0.ok ? "FAIL  " : $0.warning ? "warn  " : "ok    ")
                        + "\($0.name.padding(to: 11))\($0.detail)\n"
                }.joined())
        }
        return allOK ? ExitCode.ok : ExitCode.failure
    }
}
