import Glibc
import RCCore
import RCService
import RCStore
import RCSystem

/// Opens the state database for the daemon. A database SQLite cannot read is moved aside as
/// `state.db.corrupt-<time>` (with its WAL), a fresh one starts from the defaults and is marked
/// stale, and the log says so. Nothing else ever discards the last good snapshot. The defaults file
/// is loaded, then the store keeps the reader file (`reader.db`, what users the daemon does not
/// trust read) up to date.
enum StateRecovery {
    static func open(config: AgentConfig, log: Logger) throws -> StateStore {
        let store = try openOrRecover(config: config, log: log)
        warnIfOthersCanWrite(directoryOf: config.databasePath, log: log)
        // Before the reader file is first written: new defaults are then in that one write, not in
        // a second one straight after it.
        loadDefaults(into: store, config: config, log: log)
        let reader = StateStore.readerPath(forDatabase: config.databasePath)
        store.maintainReaderFile(at: reader) { error in
            log.error(
                "Failed to write the reader file \(reader): \(error); readers see an older state until it is written")
        }
        return store
    }

    /// Whoever can write the state directory can replace `state.db` and `reader.db` (what every
    /// reader is served) between two writes: said at start, as for the socket's directory.
    private static func warnIfOthersCanWrite(directoryOf database: String, log: Logger) {
        let slash = database.lastIndex(of: "/")
        let directory = slash.map { $0 == database.startIndex ? "/" : String(database[..<$0]) } ?? "."
        var info = stat()
        guard stat(directory, &info) == 0, let who = FileWriters.others(info) else { return }
        log.warning(
            "The state directory \(directory) can be written by \(who): they can replace the database or the "
                + "reader file; use a directory only the daemon's user can write (like /var/lib/rcagent)")
    }

    private static func openOrRecover(config: AgentConfig, log: Logger) throws -> StateStore {
        do {
            let store = try StateStore.open(config: config)
            if let problems = try store.integrityProblems() {
                throw StoreError.integrityCheckFailed(problems)
            }
            return store
        } catch let error as StoreError where error.isCorruption {
            let now = Timestamp.now()
            let aside = config.databasePath + ".corrupt-" + now.iso8601.replacing(":", with: "")
            for suffix in ["", "-wal", "-shm"] where FileBytes.exists(config.databasePath + suffix) {
                if rename(config.databasePath + suffix, aside + suffix) != 0 {
                    throw SystemError("rename \(config.databasePath + suffix)")
                }
            }
            log.error("Failed to open \(config.databasePath): \(error); moved it to \(aside), starting from defaults")
            let store = try StateStore.open(config: config)
            try store.markStale(reason: "the state database was corrupt and was moved to \(aside)", at: now)
            try store.recordEvent(.databaseRecovered, detail: .object([("movedTo", .string(aside))]), at: now)
            return store
        }
    }

    /// Replaces the stored defaults with the defaults file. A missing or broken file keeps the
    /// defaults the store already has, so a bad edit never empties a device's fallback values.
    static func loadDefaults(into store: StateStore, config: AgentConfig, log: Logger) {
        do {
            guard let defaults = try StateStore.readDefaults(path: config.defaults) else {
                // A new database has none to keep: say so plainly rather than "keeping" nothing.
                let stored = (try? store.allValues().filter { $0.source == .default }.count) ?? 0
                log.warning(
                    "No defaults file at \(config.defaults)"
                        + (stored == 0 ? ": there are no defaults" : "; keeping the \(stored) stored defaults"))
                return
            }
            try store.replaceDefaults(defaults)
            log.info("Loaded \(defaults.count) defaults from \(config.defaults)")
        } catch {
            log.error("Failed to load defaults from \(config.defaults): \(error); keeping the stored defaults")
        }
    }
}
