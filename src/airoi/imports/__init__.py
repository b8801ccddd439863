"""`airoi import` (IMPORT.md, SEMANTICS R40-R42): the files people already have, turned into
rows of one account through the load path (one transaction, the store's stamps, tombstones,
every check of a load).

    problems  one line per problem, naming the file, the line and the column
    cells     a cell read as null, decimal, date-time or text, as IMPORT.md reads sources
    rules     the rules file (TOML): which initiative takes a source row
    focus     FOCUS 1.0-1.2 cost and usage data, CSV (gzipped or not) or Parquet, streamed
    providers OpenAI's costs and Anthropic's cost report: saved pages, or asked of the API
    grouping  source rows into cost entries (R40), exact decimal sums rounded once a group
    costs     a cost import from end to end: the connection, what it replaces (R41), the load
    tables    one record a row of a CSV, XLSX or Parquet table (R42), and its template
    commands  the `airoi import` commands, their options and what they print
"""
