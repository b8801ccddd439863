"""One bundle value at a time: each field's conversion into what the store keeps.

A conversion returns the stored value or raises `Bad` with why the value does not fit;
the record's label and the field's name are added where the problem line is made
(`airoi.load.records`). Nothing here reads the store.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from airoi.timeutil import parse_date, parse_datetime, truncate_ms
from airoi.tokens import sendable

MAX_ID: Final = 2**63 - 1


class Bad(Exception):
    """A value that does not fit its field; the message says why."""


def show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return str(value)


Conv = Callable[[Any], Any]


def conv_id(value: Any) -> int:
    if type(value) is int and 0 < value <= MAX_ID:
        return value
    raise Bad(f"{show(value)} is not an id (a positive integer below 2**63)")


def int_conv(low: int, high: int) -> Conv:
    def conv(value: Any) -> int:
        if type(value) is int:
            if low <= value <= high:
                return value
            raise Bad(f"{value} is out of range ({low} to {high})")
        raise Bad(f"{show(value)} is not an integer")

    return conv


INT32: Final = int_conv(-(2**31), 2**31 - 1)
COUNT: Final = int_conv(0, 2**31 - 1)  # how many of something: never below none
MIN_INT64: Final = -(2**63)
INT64: Final = int_conv(MIN_INT64, MAX_ID)


def fits_int64(value: int) -> bool:
    return MIN_INT64 <= value <= MAX_ID


def too_large_converted(label: str, amount: int, currency: str | None, into: str) -> str:
    return (
        f"{label}.amount_cents: {amount} {currency or into} is out of range once converted to "
        f"{into} (the store holds amounts up to {MAX_ID} cents)"
    )


MONTH: Final = int_conv(1, 12)


# Text no store can keep the same: PostgreSQL refuses a NUL, and a lone surrogate (a JSON
# escape such as "\ud800" with no partner) is no character at all (SQLite kept it as "?").
# Read from a file, a lone surrogate arrives as U+FFFF (airoi.load.texts), a noncharacter.
_NOT_TEXT: Final = re.compile("[\x00\ud800-\udfff\uffff]")
# The longest text a field without a column length takes (descriptions, notes, rationale,
# note bodies, a stored setting's strings); names, titles and keys take their column's.
MAX_TEXT: Final = 100_000
MAX_LIST_ITEMS: Final = 1_000  # a list field's items (each up to MAX_NAME characters)
MAX_NAME: Final = 1_000


def check_text(value: str) -> str:
    found = _NOT_TEXT.search(value)
    if found is None:
        return value
    if found.group() == "\x00":
        raise Bad("holds a NUL character (\\u0000), which text cannot hold")
    raise Bad(
        "holds a lone surrogate (a \\ud800 to \\udfff escape without its pair) or U+FFFF, "
        "which no text holds"
    )


def str_conv(max_length: int | None) -> Conv:
    """A string up to `max_length` characters (MAX_TEXT when the column has no length)."""
    limit = MAX_TEXT if max_length is None else max_length

    def conv(value: Any) -> str:
        if type(value) is str:
            if len(value) <= limit:
                return check_text(value)
            raise Bad(f"longer than {limit:,} characters")
        raise Bad(f"{show(value)} is not a string")

    return conv


# An e-mail address inside a text (read once its full-width forms are plain, NFKC): an @
# right after any character (a quoted local part, a comment ends there too), then a domain
# with a dot, or an address literal in brackets, a comment allowed first. "R&D@night" and
# "Ada @ Finance" are names; "x"@acme.io, ada@[192.0.2.1] and ada＠acme.io are addresses.
_EMAIL: Final = re.compile(
    r"\S@(?:\([^()]*\))?(?:\[[^\]\s]+\]|[^\s@<>()\[\],;:\"]+\.[^\s@<>()\[\],;:\".]+)"
)
_AT_SIGNS: Final = ("@", "\uff20", "\ufe6b")  # @, full-width ＠, small ﹫ (NFKC: @)


def person_name(text: Conv) -> Conv:
    """A person's name: what `text` takes, holding no e-mail address, since the name is
    served wherever the person is (SEMANTICS R15: an address never is). The message does not
    repeat the text, which holds the address."""

    def conv(value: Any) -> str:
        name: str = text(value)
        if any(at in name for at in _AT_SIGNS) and _EMAIL.search(
            unicodedata.normalize("NFKC", name)
        ):
            raise Bad(
                "holds an e-mail address, and a person's name is served where an e-mail "
                "address never is (give the name alone; the address goes in email)"
            )
        return name

    return conv


def conv_bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise Bad(f"{show(value)} is not a boolean (true or false)")


def conv_number(value: Any) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is Decimal:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
        raise Bad(f"{show(value)} is out of range")
    raise Bad(f"{show(value)} is not a number")


# Dates and datetimes repeat a lot in big files: parse each text once.
_date_cache: dict[str, date] = {}
_datetime_cache: dict[str, datetime] = {}


def conv_date(value: Any) -> date:
    if type(value) is str:
        parsed = _date_cache.get(value)
        if parsed is not None:
            return parsed
        try:
            parsed = parse_date(value)
        except ValueError:
            pass
        else:
            if len(_date_cache) > 10_000:
                _date_cache.clear()
            _date_cache[value] = parsed
            return parsed
    raise Bad(f"{show(value)} is not a date (YYYY-MM-DD)")


def conv_datetime(value: Any) -> datetime:
    # SEMANTICS R3: stored naive UTC, truncated to the millisecond.
    if type(value) is str:
        parsed = _datetime_cache.get(value)
        if parsed is not None:
            return parsed
        try:
            parsed = truncate_ms(parse_datetime(value))
        except ValueError:
            pass
        else:
            if len(_datetime_cache) > 10_000:
                _datetime_cache.clear()
            _datetime_cache[value] = parsed
            return parsed
    raise Bad(f"{show(value)} is not an ISO 8601 date-time")


# A stamp kept as given (`--keep-stamps`) must leave the store's clock room: every later
# load stamps after it (SEMANTICS R32), one millisecond at a time, and no date-time goes
# past the year 9999. A year of milliseconds is room for some 31 billion loads.
LAST_KEPT_STAMP = datetime(9999, 1, 1)


def too_late_to_keep(stamp: datetime) -> str | None:
    """Why an `updated_at` kept as given cannot be kept, or None."""
    if stamp < LAST_KEPT_STAMP:
        return None
    return (
        "too late to keep: a kept updated_at must be before 9999-01-01T00:00:00Z, "
        "so that later loads can still stamp after it"
    )


def conv_currency(value: Any) -> str:
    if (
        type(value) is str
        and len(value) == 3
        and value.isascii()
        and value.isalpha()
        and value.isupper()
    ):
        return value
    raise Bad(f"{show(value)} is not a currency code (three upper-case letters)")


def enum_conv(values: tuple[str, ...]) -> Conv:
    allowed = frozenset(values)
    listed = ", ".join(values)

    def conv(value: Any) -> str:
        if type(value) is str and value in allowed:
            return value
        raise Bad(f"{show(value)} is not one of {listed}")

    return conv


def conv_str_list(value: Any) -> list[str]:
    if type(value) is list and all(type(item) is str for item in value):
        if len(value) > MAX_LIST_ITEMS:
            raise Bad(f"holds more than {MAX_LIST_ITEMS:,} items")
        if any(len(item) > MAX_NAME for item in value):
            raise Bad(f"holds an item longer than {MAX_NAME:,} characters")
        return [check_text(item) for item in value]
    raise Bad(f"{show(value)} is not an array of strings")


def plain_json(value: Any) -> Any:
    """Decimals from the decimal-mode parser become ints or floats (stored as JSON); every
    text in it, names included, is checked as a field's text is, at any depth. The message
    never quotes one: these are credentials and settings (SEMANTICS R15)."""
    if isinstance(value, dict):
        return {_text_in_json(key): plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_json(item) for item in value]
    if isinstance(value, Decimal):
        return _plain_number(value)
    if type(value) is int and not fits_int64(value):  # the reader cuts a run of digits at
        raise Bad("holds an integer past 64 bits")  # 100 (airoi.load.texts): never kept cut
    if isinstance(value, str):
        return _text_in_json(value)
    return value


def _plain_number(value: Decimal) -> int | float:
    """A number in a setting as it is stored: an integer of at most 64 bits, or a float.
    Past 64 bits it is refused before any conversion (an integer written 1e300000000 took
    minutes of CPU to make, the store's lock held)."""
    if not value.is_finite():
        raise Bad("holds a number that is not finite")
    if value == value.to_integral_value():
        if value.adjusted() > 18 or not fits_int64(int(value)):
            raise Bad("holds an integer past 64 bits")
        return int(value)
    return float(value)


def _text_in_json(text: str) -> str:
    if len(text) > MAX_TEXT:
        raise Bad(f"holds a text longer than {MAX_TEXT:,} characters")
    return check_text(text)


def conv_json_object(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        plain: dict[str, Any] = plain_json(value)
        return plain
    # These fields hold credentials and settings: a string given here is never shown (R15).
    raise Bad(f"{'a string' if isinstance(value, str) else show(value)} is not an object")


_PLAIN_DECIMAL: Final = re.compile(r"[0-9]+(\.[0-9]+)?")


def conv_rate(value: Any) -> str:
    """An FX rate: a decimal string > 0 (BUNDLE.md), kept as text, exact."""
    if type(value) is not str:
        if type(value) is int or type(value) is Decimal or type(value) is float:
            raise Bad(
                f"{show(value)} is a JSON number; write the rate as a decimal string: "
                f'"{_rate_hint(value)}"'
            )
        raise Bad(f"{show(value)} is not a decimal string such as '1.0825'")
    text = value.strip()
    if not _PLAIN_DECIMAL.fullmatch(text):
        raise Bad(f"{show(value)} is not a decimal number such as '1.0825'")
    if Decimal(text) <= 0:
        raise Bad(f"{show(value)} is not greater than 0")
    if len(text) > 40:
        raise Bad("longer than 40 characters")
    return text


def _rate_hint(number: int | Decimal | float) -> str:
    """The number as the string to write instead: its digits as given, without an exponent."""
    try:
        exact = Decimal(str(number))
    except InvalidOperation:  # pragma: no cover - every int, float or Decimal has a str
        return "1.0825"
    return format(exact, "f") if exact.is_finite() and exact > 0 else "1.0825"


def conv_secret(value: Any) -> str:
    if type(value) is str and value.strip():
        if not sendable(value):
            raise Bad(
                "holds a space, a line break or a character that is not ASCII: a client "
                "cannot send it as given"
            )
        return value
    raise Bad("not a token secret (a non-empty string)")


def person_id(value: Any) -> int | None:
    """A person reference {id, name} given instead of `*_id`: its id."""
    if value is None:
        return None
    if type(value) is dict and "id" in value and set(value) <= {"id", "name"}:
        return conv_id(value["id"])
    raise Bad(f"{show(value)} is not a person reference {{id, name}}")
