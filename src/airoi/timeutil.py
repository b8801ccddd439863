"""Datetimes and dates as SEMANTICS R3 wants them: UTC, millisecond precision, `Z`."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

# RFC 3339-style date-time: a date, `T` or space, a time with optional fraction,
# then `Z`, an offset, or nothing (UTC). A bare number or a date alone is refused.
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class OutOfRange(ValueError):
    """A well-formed date-time whose UTC moment no datetime holds (before year 1, after 9999)."""


def truncate_ms(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def utc_now() -> datetime:
    """Now as naive UTC, truncated to the millisecond (what the store keeps)."""
    return truncate_ms(datetime.now(UTC).replace(tzinfo=None))


def parse_datetime(text: str, *, round_up: bool = False) -> datetime:
    """Parse an incoming ISO 8601 date-time strictly; return naive UTC.

    A datetime holds microseconds: digits beyond them are dropped, or with `round_up` (a lower
    bound) taken as the next microsecond when any of them is not 0, so that a moment kept at
    the microsecond they cut is not counted as at or after the bound.

    Raises ValueError for anything else (a bare number, a date alone, words), and its
    subclass OutOfRange for a date-time whose UTC moment falls outside years 1 to 9999.
    """
    if not isinstance(text, str) or not _DATETIME.fullmatch(text.strip()):
        raise ValueError("not an ISO 8601 date-time")
    cleaned = text.strip()
    if cleaned[-1] in "zZ":
        cleaned = cleaned[:-1] + "+00:00"
    fraction = re.search(r"\.(\d+)", cleaned)
    beyond = ""
    if fraction and len(fraction.group(1)) > 6:  # fromisoformat takes at most microseconds
        beyond = fraction.group(1)[6:]
        cleaned = cleaned.replace(fraction.group(0), "." + fraction.group(1)[:6], 1)
    parsed = datetime.fromisoformat(cleaned)
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        except OverflowError as exc:
            # SEMANTICS R3, R12: 0001-01-01T00:00:00+01:00 is a date-time, but its UTC moment
            # falls before year 1 (or after 9999), which no datetime holds: a refusal, not a 500.
            raise OutOfRange("the UTC moment is outside years 1 to 9999") from exc
    if round_up and beyond.strip("0") and parsed < datetime.max:
        parsed += timedelta(microseconds=1)
    return parsed


def parse_date(text: str) -> date:
    if not isinstance(text, str) or not _DATE.fullmatch(text):
        raise ValueError("not an ISO 8601 date (YYYY-MM-DD)")
    return date.fromisoformat(text)


def format_datetime(value: datetime) -> str:
    """Serve a stored (naive UTC) datetime as `2026-03-01T09:30:00.125Z`."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
        f"{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}Z"
    )
