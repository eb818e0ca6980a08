import RCCore

/// The database schema as an append-only list of migrations; `PRAGMA user_version` counts how
/// many have run. Never edit a released migration: add a new one.
enum Schema {
    static let migrations: [String] = [
        // 1: the initial schema.
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE defaults (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE active_values (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE fetched_values (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE snapshots (
            kind TEXT PRIMARY KEY CHECK (kind IN ('fetched', 'active')),
            template_version TEXT,
            etag TEXT,
            fetched_at INTEGER,
            activated_at INTEGER,
            pending INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE fetch_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_attempt_at INTEGER,
            last_success_at INTEGER,
            status TEXT,
            error TEXT,
            throttle_until INTEGER,
            backoff_step INTEGER NOT NULL DEFAULT 0,
            next_fetch_at INTEGER
        );
        CREATE TABLE stale (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            is_set INTEGER NOT NULL,
            reason TEXT,
            since INTEGER
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        INSERT INTO fetch_state (id) VALUES (1);
        INSERT INTO stale (id, is_set) VALUES (1, 0);
        """,
        // 2: Live Activities, one row per activity id. JSON columns hold compact JSON text; times are
        // milliseconds since the epoch except `timestamp`, the last applied message's own seconds.
        // `removed_activities` remembers the last timestamp of removed ones (bounded).
        """
        CREATE TABLE activities (
            id TEXT PRIMARY KEY,
            attributes_type TEXT NOT NULL,
            attributes TEXT NOT NULL,
            content_state TEXT NOT NULL,
            alert TEXT,
            timestamp INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            ended_at INTEGER,
            stale_at INTEGER,
            dismiss_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX activities_dismiss_at ON activities (dismiss_at) WHERE dismiss_at IS NOT NULL;
        CREATE TABLE removed_activities (
            id TEXT PRIMARY KEY,
            timestamp INTEGER NOT NULL,
            removed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 3: each event's size in bytes (kind and detail), so the log is bounded in bytes as well as in
        // count without reading every detail back: the index, in id order, answers the running sum from its own pages.
        """
        ALTER TABLE events ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
        UPDATE events SET size = length(CAST(kind AS BLOB)) + length(CAST(detail AS BLOB));
        CREATE INDEX events_size ON events (id, size);
        """,
        // 4: the value tables as rowid tables. In a WITHOUT ROWID table the b-tree cells hold whole
        // records, and a seek that meets one whose record overflows reads all of it to compare the
        // key: the activation seeks once per key, so a 4 MB value beside 55,000 keys cost 50 s of
        // CPU. With a rowid table the key's index holds only keys, and a seek costs the same
        // whatever the values' sizes.
        """
        CREATE TABLE defaults_rowid (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO defaults_rowid (key, value) SELECT key, value FROM defaults;
        DROP TABLE defaults;
        ALTER TABLE defaults_rowid RENAME TO defaults;
        CREATE TABLE active_values_rowid (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO active_values_rowid (key, value) SELECT key, value FROM active_values;
        DROP TABLE active_values;
        ALTER TABLE active_values_rowid RENAME TO active_values;
        CREATE TABLE fetched_values_rowid (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO fetched_values_rowid (key, value) SELECT key, value FROM fetched_values;
        DROP TABLE fetched_values;
        ALTER TABLE fetched_values_rowid RENAME TO fetched_values;
        """,
        // 5: safe activation. `history`: the activated snapshots, newest last, each with its values
        // (what `rollback` restores) and outcome ('active', 'superseded', 'trial', 'rolled-back' with
        // a reason). `rejected_versions`: never activated again. `trial`: the activation on trial, written
        // before its health check runs, so a start that finds it knows the check never finished.
        """
        CREATE TABLE history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            template_version TEXT,
            activated_at INTEGER NOT NULL,
            source TEXT NOT NULL,
            changed_keys INTEGER NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('active', 'superseded', 'trial', 'rolled-back')),
            reason TEXT,
            exit_code INTEGER
        );
        CREATE TABLE history_values (
            history_id INTEGER NOT NULL REFERENCES history (id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (history_id, key)
        );
        CREATE TABLE rejected_versions (
            template_version TEXT PRIMARY KEY,
            rejected_at INTEGER NOT NULL,
            reason TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE trial (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            history_id INTEGER NOT NULL REFERENCES history (id) ON DELETE CASCADE,
            started_at INTEGER NOT NULL,
            deadline INTEGER NOT NULL
        );
        """,
        // 6: value sets. Each fetched document's values are stored once, as a set (`set_values`, keyed
        // by set and key); the fetched snapshot and every history entry name their set, so recording
        // an activation copies nothing and trimming history deletes only the sets no entry or
        // snapshot names any more. `fetched_values` becomes a view of the fetched snapshot's set.
        // No foreign key on `set_values`: checking one would cost a lookup per stored value.
        """
        CREATE TABLE value_sets (id INTEGER PRIMARY KEY AUTOINCREMENT);
        CREATE TABLE set_values (
            set_id INTEGER NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (set_id, key)
        );
        ALTER TABLE history ADD COLUMN set_id INTEGER;
        ALTER TABLE snapshots ADD COLUMN set_id INTEGER;
        INSERT INTO value_sets (id) SELECT id FROM history;
        UPDATE history SET set_id = id;
        INSERT INTO set_values (set_id, key, value)
            SELECT history_id, key, value FROM history_values WHERE history_id IN (SELECT id FROM history);
        DROP TABLE history_values;
        INSERT INTO value_sets (id) SELECT coalesce(max(id), 0) + 1 FROM value_sets;
        INSERT INTO set_values (set_id, key, value) SELECT (SELECT max(id) FROM value_sets), key, value FROM fetched_values;
        UPDATE snapshots SET set_id = (SELECT max(id) FROM value_sets) WHERE kind = 'fetched';
        DROP TABLE fetched_values;
        CREATE VIEW fetched_values (key, value) AS
            SELECT key, value FROM set_values WHERE set_id = (SELECT set_id FROM snapshots WHERE kind = 'fetched');
        """,
        // 7: the active snapshot names its value set too, so an activation or a rollback copies no
        // value: it names another set (3,000 rows deleted and 3,000 copied at each activation were
        // a third of a 3,000-parameter fetch, BENCHMARKS.md). `active_values` becomes a view of the
        // active snapshot's set. A set is made only for a database that has active values or an
        // active snapshot. A set stored in key order (every set from now on) says which rows hold
        // it (`first_row`..`last_row`, in key order): read in order by rowid, with no index seeks.
        """
        ALTER TABLE value_sets ADD COLUMN first_row INTEGER;
        ALTER TABLE value_sets ADD COLUMN last_row INTEGER;
        INSERT INTO value_sets (id) SELECT NULL
            WHERE EXISTS (SELECT 1 FROM snapshots WHERE kind = 'active') OR EXISTS (SELECT 1 FROM active_values);
        INSERT INTO set_values (set_id, key, value) SELECT (SELECT max(id) FROM value_sets), key, value FROM active_values;
        INSERT OR IGNORE INTO snapshots (kind, pending) SELECT 'active', 0 WHERE EXISTS (SELECT 1 FROM active_values);
        UPDATE snapshots SET set_id = (SELECT max(id) FROM value_sets) WHERE kind = 'active';
        DROP TABLE active_values;
        CREATE VIEW active_values (key, value) AS
            SELECT key, value FROM set_values WHERE set_id = (SELECT set_id FROM snapshots WHERE kind = 'active');
        """,
        // 8: each value set is one record (``ValueRecord``): its keys and values in the set's row,
        // not a row a key. The rows' range goes first (dropping a column rewrites the table: while
        // the records are empty, not after); ``foldValueRows(_:)`` then fills the records from the
        // rows and drops them (``valueRowsDropped``), with the views over them.
        """
        ALTER TABLE value_sets ADD COLUMN keys INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE value_sets ADD COLUMN data BLOB NOT NULL DEFAULT x'';
        ALTER TABLE value_sets DROP COLUMN first_row;
        ALTER TABLE value_sets DROP COLUMN last_row;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Runs the migrations after `version` on `db` (in the caller's transaction), each with the
    /// work its SQL cannot do, setting `user_version` after each.
    static func migrate(_ db: Database, from version: Int) throws(SQLiteError) {
        for (index, migration) in migrations.enumerated().dropFirst(version) {
            try db.execute(migration)
            if index + 1 == 8 { try foldValueRows(db) }
            try db.execute("PRAGMA user_version = \(index + 1)")
        }
    }

    /// Migration 8's fold: each value set's rows, read in key order through their index, written as
    /// its record, a set at a time; then the rows go.
    static func foldValueRows(_ db: Database) throws(SQLiteError) {
        for set in try db.query("SELECT id FROM value_sets ORDER BY id", row: { $0.integer(0) ?? 0 }) {
            let rows = try db.query(
                "SELECT key, value FROM set_values WHERE set_id = ? ORDER BY key", [.integer(set)]
            ) { (key: $0.text(0) ?? "", value: $0.text(1) ?? "") }
            let values = RemoteValues(rows)
            try db.run(
                "UPDATE value_sets SET keys = ?, data = zeroblob(?) WHERE id = ?",
                [.integer(Int64(values.count)), .integer(Int64(ValueRecord.size(of: values))), .integer(set)])
            try ValueRecord.write(values, toSet: set, on: db)
        }
        try db.execute(valueRowsDropped)
    }

    /// The end of migration 8: the rows folded into records go, with what read them.
    static let valueRowsDropped = """
        DROP VIEW fetched_values;
        DROP VIEW active_values;
        DROP TABLE set_values;
        """

    /// What ``migrations`` leave in a new, empty database, in one script: the schema as
    /// `sqlite_master` holds it after all of them, and the rows they insert. A new database is made
    /// with it, not by replaying every migration: the replay (tables rebuilt, renamed, altered, each
    /// step re-reading the whole schema) was 17 M of the 55 M instructions a new agent spends from
    /// exec to its first report, this script about 4 M (BENCHMARKS.md, issue 30, the fleet's start-up).
    /// A migration added to ``migrations`` changes this too: `SchemaTests` compares the two,
    /// schema and rows. And a new database is written from this script's image built in advance
    /// (``DatabaseImage/fresh()``): `DatabaseImageTests` fails until `DatabaseImage+Data.swift` is
    /// written again (`RCAGENT_WRITE_IMAGES=1 swift test --filter DatabaseImageTests`).
    static let fresh = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE snapshots (
            kind TEXT PRIMARY KEY CHECK (kind IN ('fetched', 'active')),
            template_version TEXT,
            etag TEXT,
            fetched_at INTEGER,
            activated_at INTEGER,
            pending INTEGER NOT NULL DEFAULT 0
        , set_id INTEGER);
        CREATE TABLE fetch_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_attempt_at INTEGER,
            last_success_at INTEGER,
            status TEXT,
            error TEXT,
            throttle_until INTEGER,
            backoff_step INTEGER NOT NULL DEFAULT 0,
            next_fetch_at INTEGER
        );
        CREATE TABLE stale (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            is_set INTEGER NOT NULL,
            reason TEXT,
            since INTEGER
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL
        , size INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE activities (
            id TEXT PRIMARY KEY,
            attributes_type TEXT NOT NULL,
            attributes TEXT NOT NULL,
            content_state TEXT NOT NULL,
            alert TEXT,
            timestamp INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            ended_at INTEGER,
            stale_at INTEGER,
            dismiss_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX activities_dismiss_at ON activities (dismiss_at) WHERE dismiss_at IS NOT NULL;
        CREATE TABLE removed_activities (
            id TEXT PRIMARY KEY,
            timestamp INTEGER NOT NULL,
            removed_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX events_size ON events (id, size);
        CREATE TABLE "defaults" (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            template_version TEXT,
            activated_at INTEGER NOT NULL,
            source TEXT NOT NULL,
            changed_keys INTEGER NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('active', 'superseded', 'trial', 'rolled-back')),
            reason TEXT,
            exit_code INTEGER
        , set_id INTEGER);
        CREATE TABLE rejected_versions (
            template_version TEXT PRIMARY KEY,
            rejected_at INTEGER NOT NULL,
            reason TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE trial (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            history_id INTEGER NOT NULL REFERENCES history (id) ON DELETE CASCADE,
            started_at INTEGER NOT NULL,
            deadline INTEGER NOT NULL
        );
        CREATE TABLE value_sets (id INTEGER PRIMARY KEY AUTOINCREMENT, keys INTEGER NOT NULL DEFAULT 0, data BLOB NOT NULL DEFAULT x'');
        INSERT INTO fetch_state (id) VALUES (1);
        INSERT INTO stale (id, is_set) VALUES (1, 0);
        INSERT INTO value_sets (id) VALUES (1);
        """
}
