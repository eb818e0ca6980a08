#!/usr/bin/env python3
"""Fills the state database DB with the 3,000 active keys `get`'s benchmarks look up ("key_N" ->
"value of key N"), in whichever layout its schema has: since schema 8 one record in the value set
the active snapshot names (each key and value as its length, unsigned LEB128, then its bytes, in
key order); in schema 7 rows of a value set; before it, rows of the active_values table. Builds
older than this one are measured on databases of their own schema (bench/get-ab.py's OLD_BIN_DIR).

Usage: bench/fill-values.py DB
"""
import sqlite3, sys


def length(n):
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


db = sqlite3.connect(sys.argv[1], isolation_level=None)
values = {f"key_{i}": f"value of key {i}" for i in range(1, 3001)}
columns = [row[1] for row in db.execute("PRAGMA table_info(value_sets)")]
kind = db.execute("SELECT type FROM sqlite_master WHERE name = 'active_values'").fetchone()
db.execute("BEGIN")
if "data" in columns:
    record = b"".join(length(len(k.encode())) + k.encode() + length(len(v.encode())) + v.encode()
                      for k, v in sorted(values.items(), key=lambda kv: kv[0].encode()))
    db.execute("INSERT INTO value_sets (id, keys, data) VALUES (1000, ?, ?)", (len(values), record))
    db.execute("INSERT OR REPLACE INTO snapshots (kind, pending, set_id) VALUES ('active', 0, 1000)")
elif kind and kind[0] == "view":
    db.execute("INSERT INTO value_sets (id) VALUES (1000)")
    db.execute("INSERT OR REPLACE INTO snapshots (kind, pending, set_id) VALUES ('active', 0, 1000)")
    db.executemany("INSERT INTO set_values VALUES (1000, ?, ?)", values.items())
else:
    db.executemany("INSERT INTO active_values VALUES (?, ?)", values.items())
db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
