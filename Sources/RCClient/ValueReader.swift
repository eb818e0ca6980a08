import RCCore
import RCStore

/// Reads values the way every CLI command sees them: from the state database when it exists,
/// else from the defaults file (a device whose daemon never ran still answers).
struct ValueReader {
    let store: StateStore?
    private let fileDefaults: [String: String]
    /// Set when the database exists but cannot be read: values then come from the defaults file.
    private(set) var storeProblem: String?

    init(config: AgentConfig) throws(CLIError) {
        var store: StateStore?
        do {
            store = try StateStore.openForReading(path: config.databasePath)
            // A damaged file opens fine and fails on first read: probe it now.
            if let store { _ = try store.value(forKey: "") }
        } catch {
            store = nil
            storeProblem = error.description
            Output.err("Warning: cannot read \(config.databasePath) (\(error)); using \(config.defaults)\n")
        }
        self.store = store
        if store == nil {
            fileDefaults = try Self.readDefaults(config.defaults)
        } else {
            fileDefaults = [:]
        }
    }

    static func readDefaults(_ path: String) throws(CLIError) -> [String: String] {
        do {
            guard let bytes = try FileBytes.read(path) else { return [:] }
            return try DefaultsDocument.parse(bytes, name: path)
        } catch let error as DocumentError {
            throw .failure("bad defaults file: \(error)")
        } catch {
            throw .failure("cannot read defaults file: \(error)")
        }
    }

    func value(forKey key: String) throws(CLIError) -> ConfigValue? {
        guard let store else {
            return fileDefaults[key].map { ConfigValue(key: key, text: $0, source: .default) }
        }
        do { return try store.value(forKey: key) } catch { throw .failure("cannot read \(store.path): \(error)") }
    }

    func allValues(prefix: String) throws(CLIError) -> [ConfigValue] {
        guard let store else {
            return fileDefaults.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }
                .map { ConfigValue(key: $0.key, text: $0.value, source: .default) }
        }
        do { return try store.allValues(prefix: prefix) } catch {
            throw .failure("cannot read \(store.path): \(error)")
        }
    }
}
