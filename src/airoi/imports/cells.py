"""A source cell read as IMPORT.md reads sources: null, a decimal read exactly as written,
a date-time in UTC (every end exclusive), a currency code.

Each function raises `BadCell` with the reason, which the caller puts after the file, the
line and the column.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final

NULL_WORDS: Final = frozenset({"", "NULL", "null", "Null"})
ONE_SECOND: Final = timedelta(seconds=1)
_CURRENCY: Final = re.compile(r"[A-Za-z]{3}")
MAX_SHOWN: Final = 40  # characters of a refused cell shown in a problem line


class BadCell(ValueError):
    pass


def shown(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "...")


def is_null(value: Any) -> bool:
    """An empty cell, or the bare word NULL (FOCUS exports write both)."""
    if value is None:
        return True
    return isinstance(value, str) and value.strip() in NULL_WORDS


def text(value: Any) -> str | None:
    if is_null(value):
        return None
    return str(value)


def decimal(value: Any) -> Decimal | None:
    """A decimal exactly as written (a float from a typed file as its shortest repr)."""
    if is_null(value):
        return None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, bool):
        raise BadCell(f"{shown(value)} is not a decimal")
    elif isinstance(value, int | float):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    else:
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:  # where the context traps it; elsewhere it is NaN
            raise BadCell(f"{shown(value)} is not a decimal") from None
    if not number.is_finite():
        words = str(value).strip().lstrip("+-").lower()
        if words.startswith(("nan", "snan", "inf")):
            raise BadCell(f"{shown(value)} is not a finite decimal")
        raise BadCell(f"{shown(value)} is not a decimal")
    return number


def instant(value: Any) -> datetime | None:
    """ISO 8601 with Z or an offset, or `YYYY-MM-DD HH:MM:SS` taken as UTC; aware, in UTC."""
    if is_null(value):
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        raw = str(value).strip()
        try:
            moment = datetime.fromisoformat(raw)
        except ValueError:
            raise BadCell(f"{shown(value)} is not an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def unix_instant(value: Any) -> datetime:
    """OpenAI's Unix seconds."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        raise BadCell(f"{shown(value)} is not a Unix time in seconds")
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (OverflowError, ValueError, OSError):
        raise BadCell(f"{shown(value)} is not a Unix time in seconds") from None


def start_date(start: datetime) -> date:
    """R40 period_start: the UTC date of the row's start."""
    return start.date()


def end_date(end: datetime) -> date:
    """R40 period_end: the UTC date of one second before the row's exclusive end."""
    return (end - ONE_SECOND).date()


def currency(value: Any) -> str | None:
    if is_null(value):
        return None
    code = str(value).strip()
    if not _CURRENCY.fullmatch(code):
        raise BadCell(f"{shown(value)} is not a three-letter currency code")
    return code.upper()
