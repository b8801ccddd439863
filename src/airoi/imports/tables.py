"""`airoi import table KIND FILE` (IMPORT.md, SEMANTICS R42): one record a row.

Columns are the bundle's field names for KIND (`--template` prints them), the source object
as `source_type`, `source_ref`, `source_connection_id`. An empty cell is null; a column left
out is a field left out (R33); `account_id` comes from `--account` when there is no such
column. A row without `id` but with `source_ref` is matched by its source (R42). Each cell is
turned into the field's type here, so a bad one is named by its line and column; the records
then go through the load like a bundle's, whose problems are named the same way.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from sqlalchemy import JSON, Boolean, Date, DateTime, Engine, Float, Integer

from airoi.imports.cells import MAX_SHOWN, shown
from airoi.imports.problems import ImportRefused, Problems, where
from airoi.imports.template import TABLE_KINDS, columns
from airoi.imports.writing import Target, connection_record, read_account, write
from airoi.load import BundleError
from airoi.load.kinds import KINDS
from airoi.load.stamping import Say

MAX_ROWS: Final = 1_000_000
MAX_CSV_FIELD: Final = 200_000  # characters in one cell (a note's 100,000 and room to refuse)
_WHOLE: Final = re.compile(r"[+-]?[0-9]+")
_TRUE: Final = frozenset({"true", "yes", "1", "y", "t"})
_FALSE: Final = frozenset({"false", "no", "0", "n", "f"})
_LABEL: Final = re.compile(r"^(\w+)\[(?:#(\d+)|id=(\d+))[^\]]*\](?:\.([\w.]+))?: (.*)$")


@dataclass
class TableReport:
    rows: int
    inserted: int
    updated: int
    unchanged: int
    connection_id: int | None


def _kind_of_file(path: Path) -> str:
    with path.open("rb") as handle:
        head = handle.read(4)
    if head == b"PAR1":
        return "parquet"
    if head[:2] == b"PK":
        return "xlsx"
    return "csv"


def _csv_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    csv.field_size_limit(MAX_CSV_FIELD)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        for row in reader:
            yield reader.line_num, list(row)


def _xlsx_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = book.worksheets[0]
        for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
            yield number, list(row)
    finally:
        book.close()


def _parquet_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    from pyarrow import parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with pq.ParquetFile(str(path)) as parquet:
        names = list(parquet.schema_arrow.names)
        yield 1, names
        number = 1
        for batch in parquet.iter_batches(batch_size=10_000):
            data = [batch.column(name).to_pylist() for name in names]
            for values in zip(*data, strict=True):
                number += 1
                yield number, list(values)


def _column_type(kind: str, name: str) -> Any:
    spec = KINDS[kind]
    if name == "account_id":
        return Integer()
    field = spec.fields.get(name)
    if field is None:
        return None
    return spec.table.c[field.column].type


def _cell(value: Any, column_type: Any) -> Any:
    """A cell as the bundle's JSON would give it; ValueError says why not."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    if isinstance(column_type, Boolean):
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError(f"{shown(value)} is not true or false")
    if isinstance(column_type, Integer):
        if isinstance(value, bool):
            raise ValueError(f"{shown(value)} is not a whole number")
        if isinstance(value, int):
            return value
        if isinstance(value, float | Decimal) and value == int(value):
            return int(value)
        text = str(value).strip()
        if _WHOLE.fullmatch(text):
            return int(text)
        raise ValueError(f"{shown(value)} is not a whole number")
    if isinstance(column_type, Float):
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
            return float(value)
        try:
            return float(str(value).strip())
        except ValueError:
            raise ValueError(f"{shown(value)} is not a number") from None
    if isinstance(column_type, DateTime):
        if isinstance(value, datetime):
            moment = value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
            return moment.isoformat() + "Z"
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day).isoformat() + "Z"
        return str(value).strip()
    if isinstance(column_type, Date):
        if isinstance(value, datetime):
            if value.time() != datetime.min.time():
                raise ValueError(f"{shown(value)} is not a date")
            return value.date().isoformat()
        if isinstance(value, date):
            return value.isoformat()
        return str(value).strip()
    if isinstance(column_type, JSON):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def read_records(
    kind: str, path: Path, account_id: int, problems: Problems
) -> tuple[list[dict[str, Any]], dict[int, int], dict[int, int]]:
    """The file's rows as records; and each record's line by its position and by its id."""
    shape = _kind_of_file(path)
    reader = {"csv": _csv_rows, "xlsx": _xlsx_rows, "parquet": _parquet_rows}[shape]
    records: list[dict[str, Any]] = []
    lines: dict[int, int] = {}
    by_id: dict[int, int] = {}
    place = "row" if shape == "parquet" else "line"
    known = set(columns(kind))
    header: list[str] | None = None
    types: list[Any] = []
    try:
        for number, values in reader(path):
            if header is None:
                header = [str(name).strip() if name is not None else "" for name in values]
                for index, name in enumerate(header):
                    if name not in known:
                        problems.at(
                            path,
                            f"{place} {number}",
                            name or f"#{index + 1}",
                            f"not a field of {kind} (--template lists them)",
                        )
                    elif name in header[:index]:
                        problems.at(path, f"{place} {number}", name, "given more than once")
                if problems:
                    return [], {}, {}
                types = [_column_type(kind, name) for name in header]
                continue
            if all(
                value is None or (isinstance(value, str) and not value.strip()) for value in values
            ):
                continue  # a blank row (a spreadsheet's trailing ones)
            if len(records) >= MAX_ROWS:
                problems.at(path, f"{place} {number}", None, f"more than {MAX_ROWS:,} rows")
                break
            if len(values) > len(header):
                extra = values[len(header) :]
                if any(value not in (None, "") for value in extra):
                    problems.at(path, f"{place} {number}", None, "more cells than the header names")
                    continue
            record: dict[str, Any] = {}
            for name, column_type, value in zip(header, types, values, strict=False):
                try:
                    record[name] = _cell(value, column_type)
                except ValueError as exc:
                    problems.at(path, f"{place} {number}", name, str(exc))
            for name in header[len(values) :]:
                record[name] = None  # a short row: its missing cells are empty
            # --account when the table has no account_id, or leaves it empty (a template's
            # column nobody filled in); another account is refused: one import, one account.
            if record.get("account_id") is None:
                record["account_id"] = account_id
            elif record["account_id"] != account_id:
                problems.at(
                    path, f"{place} {number}", "account_id", f"is not --account {account_id}"
                )
            if isinstance(record.get("id"), int):
                by_id.setdefault(record["id"], number)
            lines[len(records)] = number
            records.append(record)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError, KeyError, EOFError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        problems.at(path, None, None, f"cannot be read as {shape.upper()} ({reason})")
    except Exception as exc:  # openpyxl's and pyarrow's own errors: not this kind of file
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        problems.at(path, None, None, f"cannot be read as {shape.upper()} ({reason})")
    if header is None and not problems:
        problems.at(path, None, None, "empty: no header row")
    return records, lines, by_id


def _named(
    path: Path, kind: str, problem: str, lines: dict[int, int], by_id: dict[int, int], place: str
) -> str:
    """A load's problem line said by the file's line and column."""
    found = _LABEL.match(problem)
    if found is None or found.group(1) != kind:
        return f"{where(path)}: {problem}"
    pos, record_id, field, message = found.group(2), found.group(3), found.group(4), found.group(5)
    number = lines.get(int(pos)) if pos is not None else by_id.get(int(record_id))
    if number is None:
        return f"{where(path)}: {problem}"
    column = field.replace("source.", "source_") if field else None
    return f"{where(path, f'{place} {number}', column)}: {message}"


def import_table(
    engine: Engine,
    kind: str,
    path: Path,
    *,
    account_id: int,
    connection_id: int | None,
    dry_run: bool,
    wait: float,
    say: Say | None = None,
    now: datetime | None = None,
) -> TableReport:
    if kind not in TABLE_KINDS:
        raise ImportRefused([f"{kind}: not a kind a table holds ({', '.join(TABLE_KINDS)})"])
    target = Target(account_id=account_id, platform="spreadsheet", connection_id=connection_id)
    read_account(engine, target)
    problems = Problems()
    records, lines, by_id = read_records(kind, path, account_id, problems)
    problems.raise_if_any()
    place = "row" if _kind_of_file(path) == "parquet" else "line"
    made: dict[str, int] = {}

    def compose(conn: Any, stamp: datetime) -> dict[str, Any]:
        connection = connection_record(conn, target, stamp)
        made["connection_id"] = connection["id"]
        return {"integrations": [connection], kind: records}

    try:
        report = write(engine, compose, dry_run=dry_run, wait=wait, say=say, now=now)
    except BundleError as exc:
        for pos, made_id in exc.keyed.get(kind, {}).items():
            if pos in lines:
                by_id.setdefault(made_id, lines[pos])
        raise ImportRefused(
            [_named(path, kind, line, lines, by_id, place) for line in exc.problems]
        ) from None
    return TableReport(
        rows=len(records),
        inserted=report.inserted.get(kind, 0),
        updated=report.updated.get(kind, 0),
        unchanged=report.unchanged.get(kind, 0),
        connection_id=made.get("connection_id"),
    )


__all__ = ["MAX_SHOWN", "TableReport", "import_table", "read_records"]
