#ifndef RCAGENT_CSQLITE_SHIM_H
#define RCAGENT_CSQLITE_SHIM_H
#include <stddef.h>
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: bound text is copied by SQLite.
static inline sqlite3_destructor_type rc_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_file_control takes a void pointer; this keeps the WAL files after the last
// connection closes so read-only readers (the CLI as a non-writer user) can still open.
static inline int rc_sqlite_persist_wal(sqlite3 *db) {
    int on = 1;
    return sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
}

// The same for an attached database `schema`.
static inline int rc_sqlite_persist_wal_of(sqlite3 *db, const char *schema) {
    int on = 1;
    return sqlite3_file_control(db, schema, SQLITE_FCNTL_PERSIST_WAL, &on);
}

// The most bytes an in-memory (deserialized) database may grow to.
static inline int rc_sqlite_size_limit(sqlite3 *db, sqlite3_int64 limit) {
    return sqlite3_file_control(db, "main", SQLITE_FCNTL_SIZE_LIMIT, &limit);
}

// The main database's write-ahead log (its rollback journal outside WAL mode), or NULL when it has
// none open: the file SQLite syncs at a commit with synchronous=FULL.
static inline sqlite3_file *rc_sqlite_log_file(sqlite3 *db) {
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) != SQLITE_OK) return NULL;
    return file != NULL && file->pMethods != NULL ? file : NULL;
}

// Syncs `file` to the disk as SQLite syncs its log at a commit (fdatasync on Linux).
static inline int rc_sqlite_sync_file(sqlite3_file *file) {
    return file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
}
#endif
