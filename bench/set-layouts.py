#!/usr/bin/env python3
"""What storing one 3,000-key value set costs the state database, in three layouts, on the system's
libsqlite3 (python's sqlite3 module links the same library the daemon does): WAL, synchronous=NORMAL.
Not part of `make bench`: it measures layouts the daemon does not have, for the choice of the next
one (BENCHMARKS.md, issue 30).

  rows     set_values (set_id, key, value, PRIMARY KEY (set_id, key)), a rowid table: the daemon's
           today; a set's rows are consecutive and read by rowid range
  norowid  the same table WITHOUT ROWID: one b-tree, a set read by its key range
  record   one BLOB per set in value_sets (each key and value length-prefixed), made outside the timing

Each round stores a new set and reads the previous one whole in one transaction (an activation:
the insert and the merge's reads), then deletes the previous one in another (after the answer).
The keys and values are made in a temporary table first, outside the timing, so the insert is the
copy alone. Medians over ROUNDS, the layouts taking turns in a random order; "WAL KiB" is what the
activation's transaction added to the log (rounds that began a new pass through it not counted).

Usage: bench/set-layouts.py [ROUNDS]   (default 60)
"""
import os, random, shutil, sqlite3, statistics, struct, sys, tempfile, time

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
KEYS = 3000
SERIES = f"WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < {KEYS - 1}) "


def record(version):
    parts = []
    for i in range(KEYS):
        key, value = b"param_%04d" % i, b"value %d of template %d" % (i, version)
        parts.append(struct.pack("<II", len(key), len(value)) + key + value)
    return b"".join(parts)


class Layout:
    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="rcbench-sets-")
        self.wal = os.path.join(self.dir, "state.db-wal")
        self.db = sqlite3.connect(os.path.join(self.dir, "state.db"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if name == "record":
            self.db.execute("CREATE TABLE value_sets (id INTEGER PRIMARY KEY AUTOINCREMENT, keys INTEGER, data BLOB)")
        else:
            self.db.execute("CREATE TABLE value_sets (id INTEGER PRIMARY KEY AUTOINCREMENT, first_row, last_row)")
            self.db.execute("CREATE TABLE set_values (set_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL"
                            + (")" if name == "noindex" else ", PRIMARY KEY (set_id, key))")
                            + (" WITHOUT ROWID" if name == "norowid" else ""))
        self.active = self.dropped = None
        self.times = {"insert": [], "read old": [], "commit": [], "delete": [], "WAL KiB": []}
        self.activate(1, timed=False)
        self.drop(timed=False)

    def activate(self, version, timed=True):
        db = self.db
        data = record(version) if self.name == "record" else None
        if self.name != "record":
            db.execute("DROP TABLE IF EXISTS temp.source")
            db.execute("CREATE TEMP TABLE source (key TEXT, value TEXT)")
            db.execute(SERIES + "INSERT INTO temp.source SELECT printf('param_%04d', i), "
                       "printf('value %d of template %d', i, ?) FROM k", (version,))
        log_before = os.path.getsize(self.wal) if os.path.exists(self.wal) else 0
        t0 = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        if self.name == "record":
            new = db.execute("INSERT INTO value_sets (keys, data) VALUES (?, ?) RETURNING id", (KEYS, data)).fetchone()[0]
        else:
            new = db.execute("INSERT INTO value_sets DEFAULT VALUES RETURNING id").fetchone()[0]
            db.execute("INSERT INTO set_values SELECT ?, key, value FROM temp.source ORDER BY rowid", (new,))
            if self.name in ("rows", "noindex"):
                last = db.execute("SELECT last_insert_rowid()").fetchone()[0]
                db.execute("UPDATE value_sets SET first_row = ?, last_row = ? WHERE id = ?", (last - KEYS + 1, last, new))
        t1 = time.perf_counter()
        if self.active is not None:
            if self.name == "record":
                read = len(db.execute("SELECT data FROM value_sets WHERE id = ?", (self.active,)).fetchone()[0])
            elif self.name in ("rows", "noindex"):
                read = db.execute("SELECT count(*) FROM set_values, value_sets AS s WHERE s.id = ? AND "
                                  "set_values.rowid BETWEEN s.first_row AND s.last_row AND length(value) >= 0",
                                  (self.active,)).fetchone()[0]
            else:
                read = db.execute("SELECT count(*) FROM set_values WHERE set_id = ? AND length(value) >= 0",
                                  (self.active,)).fetchone()[0]
            assert read > 0
        t2 = time.perf_counter()
        db.execute("COMMIT")
        t3 = time.perf_counter()
        if timed:
            for name, value in (("insert", t1 - t0), ("read old", t2 - t1), ("commit", t3 - t2)):
                self.times[name].append(value * 1000)
            grown = os.path.getsize(self.wal) - log_before
            if grown > 0:  # not across a checkpoint (below), which starts the log again
                self.times["WAL KiB"].append(grown / 1024)
        self.dropped, self.active = self.active, new

    def drop(self, timed=True):
        if self.dropped is None:
            return
        t0 = time.perf_counter()
        self.db.execute("BEGIN IMMEDIATE")
        if self.name == "noindex":
            self.db.execute("DELETE FROM set_values WHERE rowid BETWEEN (SELECT first_row FROM value_sets WHERE id = ?1) "
                            "AND (SELECT last_row FROM value_sets WHERE id = ?1)", (self.dropped,))
        elif self.name != "record":
            self.db.execute("DELETE FROM set_values WHERE set_id = ?", (self.dropped,))
        self.db.execute("DELETE FROM value_sets WHERE id = ?", (self.dropped,))
        self.db.execute("COMMIT")
        if timed:
            self.times["delete"].append((time.perf_counter() - t0) * 1000)
        # As SQLite's own checkpoint would (at 1,000 pages), now and then: the log is written again
        # from its start, in a file of the size it had.
        if os.path.getsize(self.wal) > 4 << 20:
            self.db.execute("PRAGMA wal_checkpoint(RESTART)")


layouts = [Layout(name) for name in ("rows", "norowid", "noindex", "record")]
try:
    for version in range(2, rounds + 2):
        for layout in random.sample(layouts, len(layouts)):
            layout.activate(version)
            layout.drop()
    print(f"one 3,000-key value set, {rounds} rounds, medians (ms; the activation's WAL KiB), "
          f"SQLite {sqlite3.sqlite_version}:")
    print(f"{'':8} " + " ".join(f"{name:>9}" for name in layouts[0].times))
    for layout in layouts:
        print(f"{layout.name:8} " + " ".join(f"{statistics.median(v):9.2f}" for v in layout.times.values()))
finally:
    for layout in layouts:
        layout.db.close()
        shutil.rmtree(layout.dir, ignore_errors=True)
