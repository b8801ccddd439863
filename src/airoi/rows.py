"""Rows served straight from the query.

A `Shape` pairs a response Struct with one SQL column per field, in field order, each
already in its wire form: datetimes are formatted by the database (`iso_ms`), booleans and
dates come through the column types' own result processing. Building a row is then one
positional Struct call (plus one per nested Struct), and msgspec encodes it: no per-row
Python formatting and no attribute lookups by name. `Row` is the base of served rows.

On SQLite a Shape can also have the database write each row's JSON (`sqlite_json`), the
very bytes msgspec would write for the Struct: a page is then a hundred strings joined, not
two thousand values made into Python objects, built into Structs and encoded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from typing import Any, Generic, TypeVar

import msgspec
from sqlalchemy import (
    Boolean,
    ColumnElement,
    Date,
    Integer,
    String,
    case,
    func,
    literal,
    literal_column,
    null,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from airoi.db.types import stores_served_text

S = TypeVar("S", bound=msgspec.Struct)


class Row(msgspec.Struct, gc=False):
    """A served row: plain values and nested rows, never part of a reference cycle, so the
    cycle collector need not track it. A 500-row page makes a few thousand of them, and
    tracked they set off collections that walk the young objects again and again."""


class iso_ms(FunctionElement[str]):
    """A stored (naive UTC) datetime as SEMANTICS R3 serves it: `2026-03-01T09:30:00.125Z`.

    The store keeps milliseconds only (the loader truncates), so the database's own
    millisecond formatting gives exactly `airoi.timeutil.format_datetime`'s text. SQLite
    stores a Timestamp column as that text already, and it is read as it is.
    """

    type = String()
    inherit_cache = True
    name = "iso_ms"

    def __init__(self, column: ColumnElement[datetime | None]) -> None:
        super().__init__(column)

    @property
    def column(self) -> ColumnElement[Any]:
        """The datetime column served."""
        (column,) = self.clauses.clauses
        return column


@compiles(iso_ms, "sqlite")
def _iso_ms_sqlite(element: iso_ms, compiler: SQLCompiler, **kw: Any) -> str:
    column = element.column
    if stores_served_text(column.type, compiler.dialect):
        # Stored as the served text already: read it as it is.
        return compiler.process(column, **kw)
    # %f is seconds with three decimals (SS.SSS); NULL in gives NULL out.
    fmt = literal("%Y-%m-%dT%H:%M:%fZ", String())
    return f"strftime({compiler.process(fmt, **kw)}, {compiler.process(column, **kw)})"


@compiles(iso_ms, "postgresql")
def _iso_ms_postgresql(element: iso_ms, compiler: SQLCompiler, **kw: Any) -> str:
    fmt = literal('YYYY-MM-DD"T"HH24:MI:SS.MS"Z"', String())
    return f"to_char({compiler.process(element.clauses, **kw)}, {compiler.process(fmt, **kw)})"


class Shape(Generic[S]):
    """`struct`'s fields, in order, each read from one column or from a nested Shape.

    A field the row computes (a label, a comparison) is a SQL expression like any other
    column. `optional`: the Struct is null where its first field's column is NULL, as a
    nested person is where the row names nobody.
    """

    def __init__(
        self,
        struct: type[S],
        *fields: ColumnElement[Any] | Shape[Any],
        optional: bool = False,
    ) -> None:
        names = struct.__struct_fields__
        if len(fields) != len(names):
            raise TypeError(f"{struct.__name__} has {len(names)} fields, given {len(fields)}")
        if optional and isinstance(fields[0], Shape):
            raise TypeError(f"an optional {struct.__name__} is told apart by a column first")
        self.struct = struct
        self.optional = optional
        # Every column, nested Shapes' flattened in place, unlabelled; `columns` labels them.
        self.raw: list[ColumnElement[Any]] = []
        # Runs of plain columns, and nested Shapes, by their place among the columns:
        # (start, stop, nested Shape or None).
        self._parts: list[tuple[int, int, Shape[Any] | None]] = []
        for field in fields:
            start = len(self.raw)
            if isinstance(field, Shape):
                self.raw.extend(field.raw)
                self._parts.append((start, len(self.raw), field))
            elif self._parts and self._parts[-1][2] is None:
                self.raw.append(field)
                self._parts[-1] = (self._parts[-1][0], len(self.raw), None)
            else:
                self.raw.append(field)
                self._parts.append((start, len(self.raw), None))
        self.width = len(self.raw)

    @property
    def columns(self) -> list[ColumnElement[Any]]:
        """The columns to select, labelled by position (names may repeat across nests)."""
        return [column.label(f"f{i}") for i, column in enumerate(self.raw)]

    def builder(
        self, processors: Sequence[Callable[[Any], Any] | None] = ()
    ) -> Callable[[Iterable[Sequence[Any]]], list[S]]:
        """A function making the Structs of many rows at once (columns after the Shape's own,
        such as the keyset ones, are ignored). `processors[i]`, when given and not None,
        turns column i's driver value into the served one (SQLite's 0/1 into a boolean).

        It is generated from the Shape, one positional call per Struct in a single list
        comprehension: for a 500-row page that is half the time of slicing each row.
        """
        namespace: dict[str, Any] = {}

        def value(i: int) -> str:
            process = processors[i] if i < len(processors) else None
            if process is None:
                return f"r[{i}]"
            namespace[f"p{i}"] = process
            return f"p{i}(r[{i}])"

        def call(shape: Shape[Any], offset: int) -> str:
            name = f"S{sum(1 for key in namespace if key.startswith('S'))}"
            namespace[name] = shape.struct
            args = []
            for start, stop, nested in shape._parts:
                if nested is None:
                    args += [value(offset + i) for i in range(start, stop)]
                else:
                    args.append(call(nested, offset + start))
            made = f"{name}({', '.join(args)})"
            # The driver's NULL is None, whatever the column's processor.
            return f"(None if r[{offset}] is None else {made})" if shape.optional else made

        source = f"lambda rows: [{call(self, 0)} for r in rows]"
        # The text is made above from the Shape's own fields and nothing else.
        built: Callable[[Iterable[Sequence[Any]]], list[S]] = eval(source, namespace)  # noqa: S307
        return built

    def sqlite_json(self) -> ColumnElement[str] | None:
        """Each row as the JSON text msgspec writes for its Struct, made by SQLite's
        `json_object` (fields in order, under their encoded names); None when a field's text
        cannot be made exactly so. SQLite escapes a string as msgspec does, byte for byte, and
        writes an integer as it is; a boolean is stored as 0 or 1 and a date as its ISO text
        (both turned into the served form below). A float is not made here: SQLite writes 15
        significant digits, msgspec the shortest text that reads back the same number."""
        config = self.struct.__struct_config__
        if config.omit_defaults or config.array_like or config.tag is not None:
            return None
        names = self.struct.__struct_encode_fields__
        arguments: list[ColumnElement[Any]] = []
        for name, (start, nested) in zip(names, self._fields(), strict=True):
            value = _sqlite_json_value(self.raw[start]) if nested is None else nested.sqlite_json()
            if value is None:
                return None
            if not _PLAIN_NAME.fullmatch(name):
                return None
            # Written into the statement (not bound): the field names are the Struct's own.
            arguments += [literal_column(f"'{name}'", String()), value]
        written: ColumnElement[str] = func.json_object(*arguments, type_=String())
        if self.optional:
            # A CASE passes json_object's JSON on as JSON: it is nested, not quoted.
            written = case((self.raw[0].is_(None), null()), else_=written)
        return written

    def field_names(self, columns: Sequence[int]) -> tuple[str, ...] | None:
        """The encoded names of the fields served from these columns (by their place among
        `raw`), when each is a field of the Struct itself (not of a nested one); else None."""
        names = self.struct.__struct_encode_fields__
        at = {
            start: name
            for name, (start, nested) in zip(names, self._fields(), strict=True)
            if nested is None
        }
        if any(column not in at for column in columns):
            return None
        return tuple(at[column] for column in columns)

    def _fields(self) -> list[tuple[int, Shape[Any] | None]]:
        """Each field of the Struct, in order: its first column, and its nested Shape or None."""
        fields: list[tuple[int, Shape[Any] | None]] = []
        for start, stop, nested in self._parts:
            if nested is None:
                fields += [(i, None) for i in range(start, stop)]
            else:
                fields.append((start, nested))
        return fields


_SQLITE = sqlite.dialect()
_ISO_DATE = "0001-02-03"
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ZERO = literal_column("0", Integer())
_TRUE = literal_column("json('true')", String())
_FALSE = literal_column("json('false')", String())


def _sqlite_json_value(column: ColumnElement[Any]) -> ColumnElement[Any] | None:
    """`column`'s value as `json_object` should take it to write what msgspec writes for the
    value SQLAlchemy reads from SQLite; None when that cannot be said for its type."""
    impl = column.type.dialect_impl(_SQLITE)
    processor = impl.result_processor(_SQLITE, None)
    if isinstance(impl, Boolean):
        # Read as bool(stored): any integer but 0 is true.
        written = case((column != _ZERO, _TRUE), else_=_FALSE)
        if getattr(column, "nullable", True):
            written = case((column.is_(None), null()), else_=written)
        return written
    if isinstance(impl, Date):
        # Stored as text in the form it is written with; served when it is the ISO date.
        bind = impl.bind_processor(_SQLITE)
        return column if bind is not None and bind(date(1, 2, 3)) == _ISO_DATE else None
    if isinstance(impl, Integer | String) and processor is None:
        return column
    return None
