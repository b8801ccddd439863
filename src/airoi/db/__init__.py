"""The store: tables, engines and migrations."""
