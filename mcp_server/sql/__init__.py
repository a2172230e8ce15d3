"""SQL: the read-only guarded database, database sources (schema + CSV), and the bundled demo database."""
