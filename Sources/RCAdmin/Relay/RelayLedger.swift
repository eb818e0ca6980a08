import RCCore
import RCSystem

/// The last template version the relay pinged each target about, kept in
/// `StateDirectory/relay.json` so a version is relayed once across restarts and reconnects.
///
/// A target is named by where it sends (`mqtt mqtt://broker:1883 PUSH_RC`, `fcm PUSH_RC`): pointing
/// the relay at another broker or topic starts that target afresh. A version is recorded after the
/// target acknowledged it (the broker's PUBACK, FCM's answer), written atomically with fsync: a
/// crash before the write sends that one ping again on restart (a ping is idempotent: it carries
/// the version), a crash after it never does.
struct RelayLedger: Sendable {
    let path: String
    private(set) var relayed: [String: Int64]

    /// Reads the ledger; a missing file is an empty one. A damaged one is an error: starting from
    /// nothing would ping every device again, which the operator should decide.
    init(path: String) throws(RelayError) {
        self.path = path
        relayed = [:]
        let read: [UInt8]?
        do { read = try FileBytes.read(path, limit: 1 << 20) } catch {
            throw RelayError("cannot read \(path): \(error)")
        }
        guard let bytes = read else { return }
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch {
            throw RelayError("\(path) is damaged (\(error)); remove it to relay the current version again")
        }
        guard let members = json["relayed"]?.objectMembers else {
            throw RelayError("\(path) is damaged: no \"relayed\" object; remove it to relay the current version again")
        }
        for (target, value) in members {
            guard case let .integer(version) = value, version >= 0 else {
                throw RelayError(
                    "\(path) is damaged: the version of \(TextEscaping.snippet(target, maxBytes: 200)) is not a number")
            }
            relayed[target] = version
        }
    }

    func version(for target: String) -> Int64 { relayed[target] ?? 0 }

    mutating func record(_ version: Int64, for target: String) throws(RelayError) {
        relayed[target] = version
        do { try save() } catch {
            throw RelayError("cannot record version \(version) for \(target) in \(path): \(error)")
        }
    }

    /// Writes the ledger as it is. The relay does this once at start: a state directory it cannot
    /// write would otherwise show only after the first ping, whose record is then lost, so every
    /// restart (systemd's, a reboot's) would ping the fleet again. Better a clear error before any ping.
    func save() throws(SystemError) {
        let json = JSONValue.object([
            ("relayed", .object(relayed.sorted { $0.key < $1.key }.map { ($0.key, .integer($0.value)) }))
        ])
        try FileBytes.writeAtomically(path, Array(json.compactText.utf8), mode: 0o644)
    }
}

/// Why the relay could not start, or could not ping a target this time.
struct RelayError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
