"""The SQLite store: one file is the source of truth (documents, chunks, vectors, FTS5, audit
log, tokens, reviews). ``store.SQLiteStore`` implements ``storage.ports.Store``; the rest of the
package is what only SQLite needs (its schema and migrations, filters, restore, checkpoints)."""
