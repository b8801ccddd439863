"""Keyset pagination shared by every list endpoint (SPEC 4.A.1, SEMANTICS R12, R13).

Rows are ordered by (updated_at, id). A cursor encodes the position after the last
row served, the endpoint it was issued for and the account it was served to; it is
opaque to the caller and signed with the store's secret, so that anything the service
did not issue is refused with 400 (see `Cursors`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import logging
import operator
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Generic, TypeVar, cast

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from sqlalchemy import (
    ColumnElement,
    Connection,
    Dialect,
    FromClause,
    LargeBinary,
    Select,
    Table,
    and_,
    bindparam,
    select,
    tuple_,
    type_coerce,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.types import NullType

from airoi.db.prepared import Prepared
from airoi.db.secret import read_store_secret, signing_secret
from airoi.db.types import LowerBound, read_stored_datetime, stores_served_text
from airoi.errors import bad_parameter
from airoi.failures import database_unavailable
from airoi.rows import Shape, iso_ms
from airoi.timeutil import OutOfRange, parse_datetime

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_EPOCH = datetime(1970, 1, 1)
log = logging.getLogger("airoi")


class PageInfo(msgspec.Struct):
    has_more: Annotated[bool, msgspec.Meta(description="Whether another page follows.")]
    next_cursor: Annotated[
        str | None,
        msgspec.Meta(
            description="Null on the last page; pass it as cursor to get the next page. Opaque."
        ),
    ]


class ResumablePageInfo(PageInfo):
    """The page of a list a copy can resume (every list but budgets, SEMANTICS R36)."""

    # After the last row of this page (the last page included); on a page with no rows the
    # cursor passed, or null when none was.
    resume_cursor: Annotated[
        str | None,
        msgspec.Meta(
            description=(
                "After the last row of this page, the last page included: keep it and pass it as "
                "cursor later to get only what changed since. On a page with no rows, the cursor "
                "passed (null when none was)."
            )
        ),
    ]


@dataclass(frozen=True)
class Position:
    """Where a walk stopped: the (updated_at, id) of the last row served."""

    updated_at: datetime
    id: int


# SEMANTICS R13: ids are BIGINT, so a position past them would fail in SQL (a 500), not 400.
MAX_ID = 2**63 - 1
_MAX_CURSOR = 200
_TAG_BYTES = 16
NOT_ISSUED = (
    "The cursor parameter is not a cursor this endpoint issued; "
    "pass the next_cursor of a previous page unchanged."
)
# What the signed payload holds: endpoint|account id|microseconds since 1970|row id.
_PAYLOAD = re.compile(r"([a-z_]{1,40})\|([0-9]{1,19})\|(-?[0-9]{1,19})\|([0-9]{1,19})")


class CursorCodec:
    """Cursors encrypted and authenticated with one secret (SEMANTICS R13): the position
    after a row, bound to the list and the account it was served to, so that the service
    refuses with 400 any it did not issue, one issued to another account, and one out of
    range; and opaque, so that nothing in a cursor (a store-wide sequence of tombstones, say)
    tells one account of another's activity.

    AES-SIV (RFC 5297, from `cryptography`): deterministic, so one position is always the
    same cursor, and as cheap as the keyed hash that only signed them before (about 2.5 µs
    a cursor either way). Cursors issued before, signed and readable, are still taken.
    """

    def __init__(self, secret: bytes) -> None:
        # Keys of the cursors' own: the secret may sign something else one day.
        self._key = hmac.new(secret, b"airoi cursor v2", hashlib.sha256).digest()
        self._siv = AESSIV(hmac.new(secret, b"airoi cursor v3", hashlib.sha512).digest())

    def _tag(self, payload: bytes) -> bytes:
        return hashlib.blake2b(payload, key=self._key, digest_size=_TAG_BYTES).digest()

    def seal(self, payload: bytes) -> str:
        """The cursor carrying `payload`, encrypted and authenticated."""
        return base64.urlsafe_b64encode(self._siv.encrypt(payload, None)).decode().rstrip("=")

    def unseal(self, cursor: str, max_length: int = _MAX_CURSOR) -> bytes:
        """The payload of a cursor this codec sealed; 400 for anything else."""
        refused = bad_parameter(NOT_ISSUED)
        if len(cursor) > max_length:
            raise refused
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError) as exc:
            raise refused from exc
        if base64.urlsafe_b64encode(raw).rstrip(b"=") != cursor.encode("ascii"):
            # Only the form issued: the last character's unused bits are not free to vary.
            raise refused
        if len(raw) <= _TAG_BYTES:
            raise refused
        try:
            return self._siv.decrypt(raw, None)
        except InvalidTag:
            pass
        # One issued before cursors were encrypted: the payload, then its keyed hash.
        payload, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        if not hmac.compare_digest(tag, self._tag(payload)):
            raise refused
        return payload

    def encode(self, endpoint: str, account_id: int, position: Position) -> str:
        micros = (position.updated_at - _EPOCH) // timedelta(microseconds=1)
        return self.seal(f"{endpoint}|{account_id}|{micros}|{position.id}".encode())

    def decode(self, endpoint: str, account_id: int, cursor: str) -> Position:
        """The position a cursor stands for; 400 unless this endpoint issued it to this
        account, and its position is one the store can hold."""
        refused = bad_parameter(NOT_ISSUED)
        fields = _PAYLOAD.fullmatch(self.unseal(cursor).decode("ascii", "replace"))
        if fields is None:
            raise refused
        issued_for, issued_to, micros, row_id = fields.groups()
        if issued_for != endpoint:
            raise bad_parameter(
                f"The cursor was issued by another endpoint ({issued_for}); "
                "a cursor only continues the list it came from."
            )
        if int(issued_to) != account_id:
            raise bad_parameter(
                "The cursor was issued to another account; a cursor only continues a list "
                "for the account of the token it was served to."
            )
        out_of_range = bad_parameter(
            "The cursor parameter holds a position out of range; "
            "pass the next_cursor of a previous page unchanged."
        )
        if not 1 <= int(row_id) <= MAX_ID:
            raise out_of_range
        try:
            updated_at = _EPOCH + timedelta(microseconds=int(micros))
        except OverflowError as exc:  # outside the years 0001 to 9999
            raise out_of_range from exc
        return Position(updated_at, int(row_id))


class Cursors:
    """The cursor codec of the store an app serves, signed with its `signing_secret` (the
    store's own secret, with AIROI_SECRET_KEY when `given`), read once, when a cursor is
    first made or read, on the request's connection (the app may start before the store can
    be reached)."""

    def __init__(self, given: bytes | None = None) -> None:
        self._given = given
        self._codec: CursorCodec | None = None

    def codec(self, conn: Connection) -> CursorCodec:
        codec = self._codec
        if codec is None:
            secret = signing_secret(read_store_secret(conn), self._given)
            if secret is None:
                # Checked before serving (`airoi serve`): the row was removed since.
                log.error("the store holds no cursor secret; run `airoi init` against it")
                raise database_unavailable(
                    "The service is not ready to serve lists; try again later."
                )
            codec = self._codec = CursorCodec(secret)
        return codec


def changed_since(table: Table, stamp: str = "updated_at") -> ColumnElement[bool]:
    """The updated_since filter (SPEC 4.A.1: inclusive) on the table's `stamp` column, exact
    to the microsecond asked for on either store (see `airoi.db.types.LowerBound`)."""
    return table.c[stamp] >= bindparam("updated_since", type_=LowerBound())


def parse_updated_since(value: str | None) -> datetime | None:
    """SEMANTICS R3: an ISO 8601 date-time with Z, an offset or none (then UTC)."""
    if value is None:
        return None
    try:
        # A lower bound: nanoseconds are taken up to the next microsecond, never down.
        return parse_datetime(value, round_up=True)
    except OutOfRange as exc:
        raise bad_parameter(
            "The updated_since parameter is out of range: in UTC it must fall in the years "
            "0001 to 9999."
        ) from exc
    except ValueError as exc:
        raise bad_parameter(
            "The updated_since parameter must be an ISO 8601 date-time such as "
            "2026-03-01T09:30:00Z."
        ) from exc


class _Placed:
    """What a page says of where it ends (its `page` object)."""

    has_more: bool
    next_cursor: str | None
    resume_cursor: str | None

    @property
    def info(self) -> ResumablePageInfo:
        return ResumablePageInfo(
            has_more=self.has_more, next_cursor=self.next_cursor, resume_cursor=self.resume_cursor
        )


@dataclass(frozen=True)
class Page(_Placed, Generic[T]):
    rows: Sequence[T]
    has_more: bool
    next_cursor: str | None
    resume_cursor: str | None

    @property
    def budget_info(self) -> PageInfo:
        """The page of /budgets, which has no resume_cursor (SEMANTICS R36)."""
        return PageInfo(has_more=self.has_more, next_cursor=self.next_cursor)


# A filter naming a parent record checks that the account can see it (SEMANTICS R31: 404).
ExistenceCheck = Callable[[Connection, int, Any], None]


# Which rows a page statement reads: from the account's first, or behind a cursor's position
# (`ListQuery.fetch` says which statements a store runs for that).
FROM_START = "start"
AFTER_ROW = "after"
AFTER_SAME_STAMP = "after, same stamp"
AFTER_LATER_STAMP = "after, later stamp"


class ListQuery:
    """One list endpoint's page statements: `query` narrowed to the account, with the filters a
    request uses, in keyset order of `table`'s (updated_at, id), or of the two columns `order`
    names. The statements, the cursors and the cut of a page are made here; a list is served
    by `ShapedList`, whose rows are a Shape's Structs (or, on SQLite, their JSON text).

    `filters` maps a filter's name to its condition; a condition that takes a value reads it
    from `bindparam(name)`, a flag (such as leaving samples out) takes none. The statement for
    each combination of filters in use (and with or without a cursor) is built once and kept:
    a request only binds values. Building it anew each time cost more than running it.
    """

    def __init__(
        self,
        endpoint: str,
        query: Select[Any],
        table: Table,
        filters: Mapping[str, ColumnElement[bool]] | None = None,
        *,
        must_exist: Mapping[str, ExistenceCheck] | None = None,
        order: tuple[str, str] = ("updated_at", "id"),
    ) -> None:
        self.endpoint = endpoint
        self.table = table
        self.filters = dict(filters or {})
        self.must_exist = dict(must_exist or {})
        updated_at, row_id = table.c[order[0]], table.c[order[1]]
        self.order_columns = (updated_at, row_id)
        self._served_base = query.where(table.c.account_id == bindparam("account_id"))
        # The keyset columns ride last in every row, whatever `query` selects before them.
        # Read as the driver gives it (SQLite: text, PostgreSQL: a datetime): only the last
        # row's is ever used.
        self._keyed_base = self._served_base.add_columns(
            type_coerce(updated_at, NullType()).label("keyset_updated_at"),
            row_id.label("keyset_id"),
        )

        after_stamp = bindparam("after_updated_at", type_=updated_at.type)
        after_id = bindparam("after_id", type_=row_id.type)
        self._after: dict[str, ColumnElement[bool]] = {
            # PostgreSQL seeks the (account_id, updated_at, id) index to a row value: one
            # statement. (An OR spelling made SQLite scan from the account's first row.)
            AFTER_ROW: tuple_(updated_at, row_id) > tuple_(after_stamp, after_id),
            # SQLite seeks a row value on its first column only, then filters: every row
            # sharing the position's updated_at (all the rows of one bulk load) was read
            # again on every page, so a walk cost in proportion to the square of its length.
            # Two seeks instead: the rest of the rows of that stamp, then the later ones.
            AFTER_SAME_STAMP: and_(updated_at == after_stamp, row_id > after_id),
            AFTER_LATER_STAMP: updated_at > after_stamp,
        }
        self._order = (updated_at, row_id)
        self._statements: dict[tuple[frozenset[str], str, bool], Select[Any]] = {}

    def statement(self, used: frozenset[str], after: str, served: bool = False) -> Select[Any]:
        """The page statement for the filters `used`, from the start (`FROM_START`) or behind a
        cursor (`AFTER_*`); `served`: without the keyset columns (the rows carry them as
        served, see `ShapedList`)."""
        key = (used, after, served)
        statement = self._statements.get(key)
        if statement is None:
            base = self._served_base if served else self._keyed_base
            statement = base.where(*(self.filters[name] for name in sorted(used)))
            if after != FROM_START:
                statement = statement.where(self._after[after])
            statement = statement.order_by(*self._order).limit(bindparam("page_rows"))
            self._statements[key] = statement
        return statement

    def fetch(
        self,
        conn: Connection,
        behind_cursor: bool,
        params: dict[str, Any],
        run: Callable[[str], Sequence[Sequence[Any]]],
    ) -> Sequence[Sequence[Any]]:
        """The page's rows (one more than asked, if there is one): `run(after)` runs the
        statement of that kind with `params`, which hold `page_rows`."""
        if not behind_cursor:
            return run(FROM_START)
        if conn.dialect.name != "sqlite":
            return run(AFTER_ROW)
        wanted = params["page_rows"]
        same = run(AFTER_SAME_STAMP)
        if len(same) >= wanted:
            return same
        params["page_rows"] = wanted - len(same)
        try:
            return [*same, *run(AFTER_LATER_STAMP)]
        finally:
            params["page_rows"] = wanted

    def _request(
        self,
        conn: Connection,
        account_id: int,
        cursors: Cursors,
        cursor: str | None,
        limit: int,
        values: Mapping[str, Any],
    ) -> tuple[tuple[frozenset[str], bool], dict[str, Any]]:
        """Which statement a request runs, and its values; 400 or 404 as R30 orders them."""
        used = {name: value for name, value in values.items() if value is not None}
        position = (
            None
            if cursor is None
            else cursors.codec(conn).decode(self.endpoint, account_id, cursor)
        )
        for name, check in self.must_exist.items():
            if name in used:
                check(conn, account_id, used[name])
        params: dict[str, Any] = {"account_id": account_id, "page_rows": limit + 1}
        params.update(used)
        if position is not None:
            params["after_updated_at"] = position.updated_at
            params["after_id"] = position.id
        return (frozenset(used), position is not None), params

    def _cut(
        self,
        conn: Connection,
        account_id: int,
        cursors: Cursors,
        rows: Sequence[Sequence[Any]],
        limit: int,
        keyset: Callable[[Sequence[Any]], tuple[Any, int]],
        cursor: str | None,
    ) -> tuple[Sequence[Sequence[Any]], bool, str | None, str | None]:
        """The rows to serve (one more was fetched to know), has_more, next_cursor and the
        resume cursor (SEMANTICS R36), made from the last row's (updated_at, id) as
        `keyset(row)` reads them; with no row to serve the resume cursor is the one passed."""
        has_more = len(rows) > limit
        rows = rows[:limit]
        if not rows:
            return rows, has_more, None, cursor
        stamp, row_id = keyset(rows[-1])
        # SQLite's stored text ('...T09:30:00.125Z', also the served text) or a datetime.
        stamp = stamp if isinstance(stamp, datetime) else read_stored_datetime(stamp)
        resume = cursors.codec(conn).encode(self.endpoint, account_id, Position(stamp, row_id))
        return rows, has_more, resume if has_more else None, resume


# Where a keyed statement's rows hold (updated_at, id): its last two columns.
_KEYSET_LAST = operator.itemgetter(-2, -1)


def _keyset_in(shape: Shape[Any], order: tuple[Any, Any]) -> tuple[int, int] | None:
    """Where `shape` serves the keyset's stamp (as `iso_ms` text) and its key; None when it
    serves either otherwise."""
    stamp_at = id_at = None
    stamp_column, key_column = order
    for i, column in enumerate(shape.raw):
        if column is key_column:
            id_at = i
        elif isinstance(column, iso_ms) and column.column is stamp_column:
            stamp_at = i
    if stamp_at is None or id_at is None:
        return None
    return stamp_at, id_at


class ShapedList(ListQuery, Generic[S]):
    """A list whose rows are `shape`'s Structs, run `Prepared` on the driver (see
    `airoi.db.prepared`) and built by the Shape's generated builder: every list is one.
    `source`: what the Shape's columns are read from, where that is more than `table` (an
    outer join to the users a row names)."""

    def __init__(
        self,
        endpoint: str,
        shape: Shape[S],
        table: Table,
        filters: Mapping[str, ColumnElement[bool]] | None = None,
        *,
        must_exist: Mapping[str, ExistenceCheck] | None = None,
        order: tuple[str, str] = ("updated_at", "id"),
        source: FromClause | None = None,
    ) -> None:
        source = table if source is None else source
        super().__init__(
            endpoint,
            select(*shape.columns).select_from(source),
            table,
            filters,
            must_exist=must_exist,
            order=order,
        )
        self.shape = shape
        self._served_keyset = _keyset_in(shape, self.order_columns)
        self._prepared: dict[tuple[frozenset[str], str, bool], Prepared] = {}
        # The same list with each row read as its JSON text, where SQLite can write it
        # (`Shape.sqlite_json`): a row's text, then the keyset columns. Read as the bytes the
        # store keeps it in (UTF-8: a store kept otherwise is not served, airoi.app), joined
        # as they come: a str made of each row and encoded again cost a limit-100 page 11 µs
        # of its 205 (bench/README.md).
        row_json = shape.sqlite_json()
        self._as_json = (
            None
            if row_json is None
            else ListQuery(
                endpoint,
                select(sql_cast(row_json, LargeBinary)).select_from(source),
                table,
                filters,
                order=order,
            )
        )
        self._json_prepared: dict[tuple[frozenset[str], str, bool], Prepared] = {}
        # Where the row serves the keyset as top-level fields, the last row's text is read for
        # it (two fields of one row) rather than the two columns selected for every row.
        served_names = (
            None if self._served_keyset is None else shape.field_names(self._served_keyset)
        )
        self._keyset_of_json = None if served_names is None else _json_keyset(*served_names)
        # Where a Struct's row serves the keyset, it is read from those of the row's columns.
        self._keyset_of_row = (
            None if self._served_keyset is None else operator.itemgetter(*self._served_keyset)
        )
        self._builders: dict[str, Callable[[Iterable[Sequence[Any]]], list[S]]] = {}
        self._serves_keyset: dict[str, bool] = {}

    def serves_keyset(self, dialect: Dialect) -> bool:
        """Whether the rows' served id and updated_at are the keyset itself on this dialect,
        so that it need not be selected twice: where the store keeps a datetime as the served
        text (SQLite), to the last digit. On a 500-row page the two extra columns cost 57
        microseconds of the driver's 780. Elsewhere the stored value is selected, exact
        whatever precision a row was written with."""
        served = self._serves_keyset.get(dialect.name)
        if served is None:
            # Asked on every request; the type's dialect implementation is looked up once.
            served = self._serves_keyset[dialect.name] = self._served_keyset is not None and (
                stores_served_text(self.order_columns[0].type, dialect)
            )
        return served

    def rows(
        self,
        conn: Connection,
        account_id: int,
        *,
        cursors: Cursors,
        cursor: str | None,
        limit: int,
        **values: Any,
    ) -> Page[S]:
        """One page of the account's rows; `values` are the filters' (None: not filtering)."""
        rows, has_more, next_cursor, resume, first = self._read(
            self,
            self._prepared,
            self._keyset_of_row,
            conn,
            account_id,
            cursors,
            cursor,
            limit,
            values,
        )
        builder = self._builders.get(conn.dialect.name)
        if builder is None:
            # Every statement of the list selects the Shape's columns first (the keyset ones
            # follow or not), so they share processors; the builder ignores the rest.
            processors = first.result_processors(conn.dialect)
            builder = self._builders[conn.dialect.name] = self.shape.builder(processors)
        return Page(builder(rows), has_more, next_cursor, resume)

    def _read(
        self,
        query: ListQuery,
        prepared: dict[tuple[frozenset[str], str, bool], Prepared],
        served_keyset: Callable[[Sequence[Any]], tuple[Any, int]] | None,
        conn: Connection,
        account_id: int,
        cursors: Cursors,
        cursor: str | None,
        limit: int,
        values: Mapping[str, Any],
    ) -> tuple[Sequence[Sequence[Any]], bool, str | None, str | None, Prepared]:
        """One page by `query`'s statements, each run `Prepared` on the driver and kept in
        `prepared`: the rows to serve, has_more, the next and resume cursors (`_cut`), and the
        first statement run. Where the dialect serves the keyset (`serves_keyset`) it is read
        from the last row by `served_keyset`, and the statements select no keyset columns."""
        (used, after), params = self._request(conn, account_id, cursors, cursor, limit, values)
        keyset = served_keyset if self.serves_keyset(conn.dialect) else None
        ran: list[Prepared] = []

        def run(kind: str) -> Sequence[Sequence[Any]]:
            key = (used, kind, keyset is not None)
            statement = prepared.get(key)
            if statement is None:
                statement = prepared[key] = Prepared(query.statement(*key))
            ran.append(statement)
            return statement.rows(conn, params)

        fetched = self.fetch(conn, after, params, run)
        rows, has_more, next_cursor, resume = self._cut(
            conn, account_id, cursors, fetched, limit, keyset or _KEYSET_LAST, cursor
        )
        return rows, has_more, next_cursor, resume, ran[0]

    def served(
        self,
        conn: Connection,
        account_id: int,
        *,
        cursors: Cursors,
        cursor: str | None,
        limit: int,
        **values: Any,
    ) -> Page[S] | EncodedPage:
        """One page as a response serves it: on SQLite, where the Shape's rows can be written
        by the database (`Shape.sqlite_json`), their JSON array as it is sent; otherwise the
        Structs of `rows`. The same rows, cursors and errors either way."""
        as_json = self._as_json
        if as_json is None or conn.dialect.name != "sqlite" or not sqlite_writes_json():
            return self.rows(
                conn, account_id, cursors=cursors, cursor=cursor, limit=limit, **values
            )
        rows, has_more, next_cursor, resume, _ = self._read(
            as_json,
            self._json_prepared,
            self._keyset_of_json,
            conn,
            account_id,
            cursors,
            cursor,
            limit,
            values,
        )
        data = msgspec.Raw(b"[" + b",".join([row[0] for row in rows]) + b"]")
        return EncodedPage(data, has_more, next_cursor, resume)


def _json_keyset(stamp: str, key: str) -> Callable[[Sequence[Any]], tuple[Any, int]]:
    """The (updated_at, id) of a row read as its JSON text, served under these names."""
    keyset = msgspec.defstruct("Keyset", [(stamp, str), (key, int)])
    decode = msgspec.json.Decoder(keyset).decode
    read = operator.attrgetter(stamp, key)
    return lambda row: read(decode(row[0]))


@dataclass(frozen=True)
class EncodedPage(_Placed):
    """A page whose rows are encoded already: `data` is their JSON array."""

    data: msgspec.Raw
    has_more: bool
    next_cursor: str | None
    resume_cursor: str | None


@functools.cache
def sqlite_writes_json() -> bool:
    """Whether the SQLite library this process uses has its JSON functions (built in since
    3.38; a build may leave them out): without them, pages are built in Python."""
    try:
        with closing(sqlite3.connect(":memory:")) as probe:
            return bool(probe.execute("SELECT json_object('a', json('true'))").fetchone())
    except sqlite3.Error:
        return False


def served_rows(page: Page[S] | EncodedPage) -> list[S]:
    """What a response Struct's `data` holds for `page`: its Structs, or, for an
    `EncodedPage`, the JSON array of its rows as a `msgspec.Raw`, which msgspec writes as it
    is. The Struct's annotation (a list of rows) is what the description shows; the body is
    the same bytes either way, and nothing but the encoder reads a response's `data`."""
    if isinstance(page, EncodedPage):
        return cast("list[S]", page.data)
    return list(page.rows)
