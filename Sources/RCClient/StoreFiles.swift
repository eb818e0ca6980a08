import Glibc
import RCCore
import RCStore

/// Which file the CLI's reads come from. The daemon keeps a reader file for every user (see
/// `StateStore+ReaderFile`): it is read whenever it is current, with no lock taken, and it is all a
/// user the daemon does not trust can read (the state database is private). A user who may read the
/// state database reads that instead when the reader file is missing or behind it; one who may not
/// reads the reader file as it is. What is opened is probed once: damage shows here, not mid-command.
enum StoreFiles {
    /// The store to read, or `nil` when there is none yet (the daemon never ran). A reader file that
    /// cannot be read is said through `warn` and the state database is tried; a state database that
    /// cannot be read throws.
    static func open(_ config: AgentConfig, warn: (TerminalText) -> Void) throws(StoreError) -> StateStore? {
        let database = config.databasePath
        let reader = StateStore.readerPath(forDatabase: database)
        let mayReadDatabase = access(database, R_OK) == 0
        if !mayReadDatabase || StateStore.readerFileIsCurrent(reader, database: database) {
            do {
                if let store = try StateStore.openReaderFile(path: reader) {
                    _ = try store.value(forKey: "")  // a damaged file opens fine and fails on first read
                    return store
                }
            } catch {
                warn("Warning: cannot read \(reader) (\(error)); using \(database)\n")
            }
        }
        guard let store = try StateStore.openForReading(path: database) else { return nil }
        _ = try store.value(forKey: "")
        return store
    }
}
