"""Keyset pagination shared by every list endpoint (SPEC 4.A.1, SEMANTICS R12, R13).

Rows are ordered by (updated_at, id). A cursor encodes the position after the last
row served and the endpoint it was issued for; it is opaque to the caller and
carries a tag so that anything the service did not issue is refused with 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import msgspec
from sqlalchemy import ColumnElement, Connection, Select, Table, literal, tuple_

from airoi.errors import bad_parameter
from airoi.timeutil import parse_datetime

T = TypeVar("T")

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_EPOCH = datetime(1970, 1, 1)
_CURSOR_KEY = b"airoi cursor v1"


class PageInfo(msgspec.Struct):
    has_more: bool
    next_cursor: str | None


@dataclass(frozen=True)
class Position:
    """Where a walk stopped: the (updated_at, id) of the last row served."""

    updated_at: datetime
    id: int


def _tag(payload: bytes) -> bytes:
    return hmac.new(_CURSOR_KEY, payload, hashlib.blake2b).digest()[:8]


def encode_cursor(endpoint: str, position: Position) -> str:
    micros = (position.updated_at - _EPOCH) // timedelta(microseconds=1)
    payload = f"{endpoint}|{micros}|{position.id}".encode()
    return base64.urlsafe_b64encode(payload + _tag(payload)).decode().rstrip("=")


def decode_cursor(endpoint: str, cursor: str) -> Position:
    """The position a cursor stands for; 400 when this endpoint did not issue it (R13)."""
    refused = bad_parameter(
        "The cursor parameter is not a cursor this endpoint issued; "
        "pass the next_cursor of a previous page unchanged."
    )
    if len(cursor) > 200:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError) as exc:
        raise refused from exc
    payload, tag = raw[:-8], raw[-8:]
    if len(raw) <= 8 or not hmac.compare_digest(tag, _tag(payload)):
        raise refused
    try:
        issued_for, micros, row_id = payload.decode().split("|")
        position = Position(_EPOCH + timedelta(microseconds=int(micros)), int(row_id))
    except (ValueError, OverflowError) as exc:
        raise refused from exc
    if issued_for != endpoint:
        raise bad_parameter(
            f"The cursor was issued by another endpoint ({issued_for}); "
            "a cursor only continues the list it came from."
        )
    return position


def parse_updated_since(value: str | None) -> datetime | None:
    """SEMANTICS R3: an ISO 8601 date-time with Z, an offset or none (then UTC)."""
    if value is None:
        return None
    try:
        return parse_datetime(value)
    except ValueError as exc:
        raise bad_parameter(
            "The updated_since parameter must be an ISO 8601 date-time such as "
            "2026-03-01T09:30:00Z."
        ) from exc


def keyset_after(updated_at: Any, row_id: Any, position: Position) -> ColumnElement[bool]:
    # A row-value comparison, so that SQLite and PostgreSQL both seek the (account_id,
    # updated_at, id) index to the position: the OR spelling made SQLite scan from the
    # account's first row, so a page deep in the table cost in proportion to its depth.
    return tuple_(updated_at, row_id) > tuple_(
        literal(position.updated_at, type_=updated_at.type), literal(position.id, type_=row_id.type)
    )


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: Sequence[T]
    has_more: bool
    next_cursor: str | None

    @property
    def info(self) -> PageInfo:
        return PageInfo(has_more=self.has_more, next_cursor=self.next_cursor)


def fetch_page(
    conn: Connection,
    endpoint: str,
    query: Select[Any],
    table: Table,
    *,
    cursor: str | None,
    limit: int,
    build: Callable[[Any], T],
) -> Page[T]:
    """Run `query` (already filtered to the account) one page at a time, in keyset order
    of `table`'s (updated_at, id)."""
    updated_at, row_id = table.c.updated_at, table.c.id
    if cursor is not None:
        query = query.where(keyset_after(updated_at, row_id, decode_cursor(endpoint, cursor)))
    rows = conn.execute(query.order_by(updated_at, row_id).limit(limit + 1)).all()
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_more:
        last = rows[-1]
        next_cursor = encode_cursor(endpoint, Position(last.updated_at, last.id))
    return Page([build(row) for row in rows], has_more, next_cursor)
