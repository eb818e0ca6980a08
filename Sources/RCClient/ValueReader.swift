import RCCore
import RCStore
import RCSystem

/// Reads values the way every CLI command sees them: from the reader file or the state database
/// (``StoreFiles``) when there is one, else from the defaults file (a device whose daemon never ran still answers). A database that
/// exists but cannot be read (empty, truncated, damaged) is never created or repaired here: a
/// warning goes to stderr and the values come from the defaults file.
struct ValueReader {
    let store: StateStore?
    private let config: AgentConfig
    private let fileDefaults: [String: String]
    /// Set when the database exists but cannot be read: values then come from the defaults file.
    private(set) var storeProblem: String?

    init(config: AgentConfig) throws(CLIError) {
        self.config = config
        var store: StateStore?
        do {
            store = try StoreFiles.open(config) { Output.err($0) }
        } catch {
            store = nil
            storeProblem = error.description
            Self.warn(config, error)
        }
        self.store = store
        if store == nil {
            fileDefaults = try Self.readDefaults(config.defaults)
        } else {
            fileDefaults = [:]
        }
    }

    private static func warn(_ config: AgentConfig, _ error: any Error) {
        Output.err("Warning: cannot read \(config.databasePath) (\(error)); using \(config.defaults)\n")
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

    /// The defaults file's values after a read of the database failed past the probe (damage in
    /// pages the probe did not touch): the same fallback as a database that does not open.
    private func fallback(after error: StoreError) throws(CLIError) -> [String: String] {
        Self.warn(config, error)
        return try Self.readDefaults(config.defaults)
    }

    func value(forKey key: String) throws(CLIError) -> ConfigValue? {
        let defaults: [String: String]
        if let store {
            do { return try store.value(forKey: key) } catch { defaults = try fallback(after: error) }
        } else {
            defaults = fileDefaults
        }
        // By bytes, as the database looks keys up: `K` is not U+212A KELVIN SIGN.
        return defaults.first { $0.key.sameBytes(as: key) }.map {
            ConfigValue(key: key, text: $0.value, source: .default)
        }
    }

    /// ``value(forKey:)`` for an answer that must not be a guess (`check-update`): a database read
    /// that fails past the open-time probe throws instead of falling back to the defaults file,
    /// which may lack what the database holds (a required update).
    func valueWithoutFallback(forKey key: String) throws -> ConfigValue? {
        guard let store else { return try value(forKey: key) }
        return try store.value(forKey: key)
    }

    func allValues(prefix: String) throws(CLIError) -> [ConfigValue] {
        let defaults: [String: String]
        if let store {
            do { return try store.allValues(prefix: prefix) } catch { defaults = try fallback(after: error) }
        } else {
            defaults = fileDefaults
        }
        return defaults.filter { $0.key.hasBytePrefix(prefix) }.sorted { $0.key.precedesByBytes($1.key) }
            .map { ConfigValue(key: $0.key, text: $0.value, source: .default) }
    }
}
