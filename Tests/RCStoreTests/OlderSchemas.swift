@testable import RCStore

/// Makes at `path` a state database as an older release left it: the first `version` migrations
/// (in WAL mode, as the store opens it), `user_version` set to `version`, then `rows` run on it.
/// For the tests that migrate such a database to this build's schema.
func makeDatabase(at path: String, schemaVersion version: Int, rows: String = "") throws {
    let old = try Database(path: path, mode: .readWrite)
    try old.execute("PRAGMA journal_mode=WAL")
    for migration in Schema.migrations.prefix(version) { try old.execute(migration) }
    try old.execute("PRAGMA user_version = \(version)")
    if !rows.isEmpty { try old.execute(rows) }
}
