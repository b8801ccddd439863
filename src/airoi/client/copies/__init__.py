"""Where `airoi pull` keeps a copy: a DuckDB file, or a directory of Parquet or CSV files,
and the position of every walk beside its rows.

One store a format behind one protocol (`protocol.CopyStore`, made by `open_store`):
`duckdb_file.DuckDbStore` keeps the lists as tables of the file itself;
`files.ParquetStore` and `files.CsvStore` keep one file a list and stage what is not in the
files yet in DuckDB beside them (`files.FileStore`). The tables and positions both keep in
DuckDB are `tables.CopyTables`'. Which target means which format, and the checks made on a
target before anything is written, are `targets`'; the lists a copy holds are `lists`', the
names of its files and tables `layout`'s.

Nothing is created before the first write: a store opened on a target that does not exist
creates it with its first batch.
"""
