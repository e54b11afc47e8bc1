"""The PostgreSQL + pgvector store. ``store.PostgresStore`` implements ``storage.ports.Store``;
the rest of the package is what only PostgreSQL needs (roles and migrations, the pool and
transactions, row writes and reads, checkpoints, the outbox, buckets and cache tables). Nothing
here is imported by ``storage`` itself, so a plain install never loads psycopg."""
