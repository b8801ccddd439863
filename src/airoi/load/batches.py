"""The store in batches: ids looked up a thousand at a time, and rows written as one
DBAPI executemany (or a COPY on PostgreSQL) per batch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from sqlalchemy import Connection, Date, DateTime, Table, select

BATCH: Final = 1000  # rows per store round trip (lookups, inserts, updates)


def chunks(values: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ids_to_accounts(conn: Connection, table: Table, ids: Iterable[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for batch in chunks(sorted(ids)):
        query = select(table.c.id, table.c.account_id).where(table.c.id.in_(batch))
        for row_id, account_id in conn.execute(query):
            found[row_id] = account_id
    return found


def _memoized(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    cache: dict[Any, Any] = {}

    def memo(value: Any) -> Any:
        found = cache.get(value)
        if found is None:
            if len(cache) > 10_000:
                cache.clear()
            found = cache[value] = process(value)
        return found

    return memo


class Bulk:
    """A compiled INSERT or UPDATE run as one DBAPI executemany (a COPY for PostgreSQL inserts).

    Values go through the dialect's own bind processors, as SQLAlchemy would
    convert them, but without its per-row parameter handling, which costs more
    than SQLite's insert itself on a million rows. psycopg runs an executemany
    one row at a time; COPY into the same transaction is several times faster.
    """

    def __init__(
        self, conn: Connection, statement: Any, keys: Iterable[str], copy_into: Table | None = None
    ) -> None:
        dialect = conn.dialect
        keys = list(keys)
        compiled = statement.compile(dialect=dialect, column_keys=keys)
        self.sql: str = compiled.string
        self.copy: str | None = None
        if copy_into is not None and dialect.name == "postgresql":
            quote = dialect.identifier_preparer.quote
            columns = ", ".join(quote(name) for name in keys)
            self.copy = f"COPY {quote(copy_into.name)} ({columns}) FROM STDIN"
        self.positional = compiled.positiontup is not None
        names = list(compiled.positiontup or compiled.binds)
        self.processors = []
        for name in names:
            column_type = compiled.binds[name].type
            process = column_type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None and isinstance(column_type, (Date, DateTime)):
                process = _memoized(process)  # a million rows share few dates
            self.processors.append((name, process))
        if self.copy is not None:  # COPY takes the values in its own column order
            by_name = dict(self.processors)
            self.processors = [(name, by_name[name]) for name in keys]

    def run(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        processors = self.processors
        if self.copy is not None:
            raw = conn.connection.driver_connection
            assert raw is not None
            with raw.cursor() as cursor, cursor.copy(self.copy) as copy:
                for row in rows:
                    copy.write_row(
                        [
                            row[name]
                            if process is None or row[name] is None
                            else process(row[name])
                            for name, process in processors
                        ]
                    )
            return
        if self.positional:
            params: list[Any] = [
                tuple(
                    row[name] if process is None or row[name] is None else process(row[name])
                    for name, process in processors
                )
                for row in rows
            ]
        else:
            params = [
                {
                    name: row[name] if process is None or row[name] is None else process(row[name])
                    for name, process in processors
                }
                for row in rows
            ]
        conn.exec_driver_sql(self.sql, params)
