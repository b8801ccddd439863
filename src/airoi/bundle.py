"""Bundle validation and upsert: the write side used by `airoi load` and `airoi demo`.

BUNDLE.md is the contract. A bundle is read twice, in bounded memory:

- pass 1 streams every record and validates it. Small kinds (accounts, people,
  initiatives, ...) are kept; the big ones (cost and value entries,
  observations) are checked one record at a time and only what later checks
  need is kept: their ids (duplicates), and the distinct combinations of the
  fields that reach other records (initiative, currency, vendor, connection),
  each with the ids carrying it, so a reference or FX problem still names the
  records. Ids already in the store are looked up in batches.
- pass 2 runs only when pass 1 found nothing wrong: deletes, then the small
  kinds, then the big kinds streamed again and upserted in batches, all in one
  transaction. A problem met while writing still raises BundleError and rolls
  everything back.

A file is streamed with ijson (yajl2_c) in decimal mode, so no number is rounded
while it is read; numbers become floats only once accepted. An FX rate is a
decimal string (BUNDLE.md): given as a JSON number it is refused, as a reader
of the same file elsewhere may round it.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import IO, Any, Final

import ijson  # type: ignore[import-untyped]
from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    Date,
    DateTime,
    Engine,
    Float,
    Integer,
    String,
    Table,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import DataError, IntegrityError

from airoi.db import tables
from airoi.finance.money import FxTable, MissingRate, entry_date
from airoi.timeutil import parse_date, parse_datetime, truncate_ms, utc_now
from airoi.tokens import (
    ISSUING_ROLES,
    SECRET_MIN_LENGTH,
    TOKEN_PREFIX,
    hash_token,
    secret_length,
    sendable,
    shown_prefix,
)

__all__ = ["BundleError", "LoadReport", "ProgressHook", "load_bundle"]

ProgressHook = Callable[[int, int], None]

_BATCH: Final = 1000  # rows per store round trip (lookups, inserts, updates)
_MAX_PROBLEMS: Final = 1000  # lines kept; the rest are counted in one last line
_IDS_PER_GROUP: Final = 50  # records named per shared problem of the big kinds
_PROGRESS_BYTES: Final = 1 << 20  # report file progress about every MiB
_PROGRESS_RECORDS: Final = 1000  # or every thousand records of a parsed bundle
_SQLITE_CACHE_KIB = 65536  # page cache while loading (see _tuned_for_loading)
_MAX_ID: Final = 2**63 - 1

# SPEC sections 2 and 3.
STAGES: Final = (
    "identified",
    "reviewing",
    "implementing",
    "live",
    "paused",
    "completed",
    "rejected",
    "dismissed",
)
VALUE_STATUSES: Final = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")
COST_CATEGORIES: Final = ("capex", "opex")
OUTCOMES: Final = ("continue", "scale", "fix", "pause", "retire")
INTEGRATION_STATUSES: Final = ("active", "paused", "error", "disconnected")
AUTH_TYPES: Final = ("oauth", "api_key", "basic", "webhook", "github_app", "service_account")
OPEX_CADENCES: Final = ("monthly", "quarterly", "annually")
BUDGET_SOURCES: Final = ("approval", "revision", "manual")
BUDGET_STATUSES: Final = ("approved", "pending", "rejected")
ROLES: Final = ("owner", "admin", "member", "viewer")
ASSESSMENT_STATUSES: Final = ("active", "closed")
OBSERVATION_ROLES: Final = ("baseline", "reading")

# SPEC 2.3: the category follows the type unless a person set it.
CAPEX_COST_TYPES: Final = frozenset(
    {"implementation", "hardware", "setup", "integration", "training", "consulting", "migration"}
)

# Kinds the top-level "delete" object may name. FX rates have no id: skipped.
_DELETABLE: Final = (
    "initiative_notes",
    "budget_versions",
    "cost_entries",
    "value_entries",
    "observations",
    "metrics",
    "integrations",
    "assessments",
    "initiatives",
)
# Deleting one of these sets the column naming it to null on the rows of these kinds, with a
# new updated_at so a sync by updated_since sees the change (BUNDLE load rules). A deleted
# initiative's decisions stay so (nothing else about them changes, SPEC 3); a dangling
# metric or connection id would be refused when its row is loaded again.
_UNLINKED_ON_DELETE: Final = {
    "initiatives": (("decisions", "initiative_id"),),
    "metrics": (("observations", "metric_id"),),
    "integrations": (
        ("cost_entries", "source_connection_id"),
        ("value_entries", "source_connection_id"),
        ("observations", "source_connection_id"),
    ),
}
# The kinds a list serves (SEMANTICS R34): removing one of their rows leaves a tombstone.
SERVED_LISTS: Final = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
)
_INITIATIVE_CHILDREN: Final = (
    "initiative_notes",
    "budget_versions",
    "cost_entries",
    "value_entries",
    "observations",
)


class BundleError(Exception):
    """A bundle that cannot be loaded; `problems` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass
class LoadReport:
    """Rows inserted, updated, unchanged and deleted, keyed by bundle key."""

    inserted: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        return {
            "inserted": sum(self.inserted.values()),
            "updated": sum(self.updated.values()),
            "unchanged": sum(self.unchanged.values()),
            "deleted": sum(self.deleted.values()),
        }


# --------------------------------------------------------------------------- values


class _Bad(Exception):
    """A value that does not fit its field; the message says why."""


def _show(value: Any) -> str:
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


def _conv_id(value: Any) -> int:
    if type(value) is int and 0 < value <= _MAX_ID:
        return value
    raise _Bad(f"{_show(value)} is not an id (a positive integer below 2**63)")


def _int_conv(low: int, high: int) -> Conv:
    def conv(value: Any) -> int:
        if type(value) is int:
            if low <= value <= high:
                return value
            raise _Bad(f"{value} is out of range ({low} to {high})")
        raise _Bad(f"{_show(value)} is not an integer")

    return conv


_INT32: Final = _int_conv(-(2**31), 2**31 - 1)
_MIN_INT64: Final = -(2**63)
_INT64: Final = _int_conv(_MIN_INT64, _MAX_ID)


def _fits_int64(value: int) -> bool:
    return _MIN_INT64 <= value <= _MAX_ID


def _too_large_converted(label: str, amount: int, currency: str | None, into: str) -> str:
    return (
        f"{label}.amount_cents: {amount} {currency or into} is out of range once converted to "
        f"{into} (the store holds amounts up to {_MAX_ID} cents)"
    )


_MONTH: Final = _int_conv(1, 12)


# Text no store can keep the same: PostgreSQL refuses a NUL, and a lone surrogate (a JSON
# escape such as "\ud800" with no partner) is no character at all (SQLite kept it as "?").
_NOT_TEXT: Final = re.compile("[\x00\ud800-\udfff]")


def _check_text(value: str) -> str:
    found = _NOT_TEXT.search(value)
    if found is None:
        return value
    if found.group() == "\x00":
        raise _Bad("holds a NUL character (\\u0000), which text cannot hold")
    raise _Bad("holds a lone surrogate (a \\ud800 to \\udfff escape without its pair)")


def _str_conv(max_length: int | None) -> Conv:
    def conv(value: Any) -> str:
        if type(value) is str:
            if max_length is None or len(value) <= max_length:
                return _check_text(value)
            raise _Bad(f"longer than {max_length} characters")
        raise _Bad(f"{_show(value)} is not a string")

    return conv


def _conv_bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise _Bad(f"{_show(value)} is not a boolean (true or false)")


def _conv_number(value: Any) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is Decimal:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
        raise _Bad(f"{_show(value)} is out of range")
    raise _Bad(f"{_show(value)} is not a number")


# Dates and datetimes repeat a lot in big files: parse each text once.
_date_cache: dict[str, date] = {}
_datetime_cache: dict[str, datetime] = {}


def _conv_date(value: Any) -> date:
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
    raise _Bad(f"{_show(value)} is not a date (YYYY-MM-DD)")


def _conv_datetime(value: Any) -> datetime:
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
    raise _Bad(f"{_show(value)} is not an ISO 8601 date-time")


def _conv_currency(value: Any) -> str:
    if (
        type(value) is str
        and len(value) == 3
        and value.isascii()
        and value.isalpha()
        and value.isupper()
    ):
        return value
    raise _Bad(f"{_show(value)} is not a currency code (three upper-case letters)")


def _enum_conv(values: tuple[str, ...]) -> Conv:
    allowed = frozenset(values)
    listed = ", ".join(values)

    def conv(value: Any) -> str:
        if type(value) is str and value in allowed:
            return value
        raise _Bad(f"{_show(value)} is not one of {listed}")

    return conv


def _conv_str_list(value: Any) -> list[str]:
    if type(value) is list and all(type(item) is str for item in value):
        return [_check_text(item) for item in value]
    raise _Bad(f"{_show(value)} is not an array of strings")


def _plain_json(value: Any) -> Any:
    """Decimals from the decimal-mode parser become ints or floats (stored as JSON)."""
    if isinstance(value, dict):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_json(item) for item in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _conv_json_object(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        plain: dict[str, Any] = _plain_json(value)
        return plain
    # These fields hold credentials and settings: a string given here is never shown (R15).
    raise _Bad(f"{'a string' if isinstance(value, str) else _show(value)} is not an object")


_PLAIN_DECIMAL: Final = re.compile(r"[0-9]+(\.[0-9]+)?")


def _conv_rate(value: Any) -> str:
    """An FX rate: a decimal string > 0 (BUNDLE.md), kept as text, exact."""
    if type(value) is not str:
        if type(value) is int or type(value) is Decimal or type(value) is float:
            raise _Bad(
                f"{_show(value)} is a JSON number; write the rate as a decimal string: "
                f'"{_rate_hint(value)}"'
            )
        raise _Bad(f"{_show(value)} is not a decimal string such as '1.0825'")
    text = value.strip()
    if not _PLAIN_DECIMAL.fullmatch(text):
        raise _Bad(f"{_show(value)} is not a decimal number such as '1.0825'")
    if Decimal(text) <= 0:
        raise _Bad(f"{_show(value)} is not greater than 0")
    if len(text) > 40:
        raise _Bad("longer than 40 characters")
    return text


def _rate_hint(number: int | Decimal | float) -> str:
    """The number as the string to write instead: its digits as given, without an exponent."""
    try:
        exact = Decimal(str(number))
    except InvalidOperation:  # pragma: no cover - every int, float or Decimal has a str
        return "1.0825"
    return format(exact, "f") if exact.is_finite() and exact > 0 else "1.0825"


def _conv_secret(value: Any) -> str:
    if type(value) is str and value.strip():
        if not sendable(value):
            raise _Bad(
                "holds a space, a line break or a character that is not ASCII: a client "
                "cannot send it as given"
            )
        return value
    raise _Bad("not a token secret (a non-empty string)")


def _person_id(value: Any) -> int | None:
    """A person reference {id, name} given instead of `*_id`: its id."""
    if value is None:
        return None
    if type(value) is dict and "id" in value and set(value) <= {"id", "name"}:
        return _conv_id(value["id"])
    raise _Bad(f"{_show(value)} is not a person reference {{id, name}}")


# --------------------------------------------------------------------------- kinds


@dataclass(frozen=True, eq=False)
class _Field:
    name: str  # as spelt in the bundle
    column: str
    conv: Conv
    required: bool


@dataclass(frozen=True, eq=False)
class _Kind:
    key: str
    table: Table
    # self: the account itself; field: `account_id` required; initiative: the
    # initiative's account; observation: initiative's, else metric's, else given;
    # user: the token's user's.
    account: str
    fields: dict[str, _Field]
    convs: dict[str, tuple[str, Conv]]  # field name -> (column, conversion), the hot path
    blank: dict[str, Any]  # every written column with its default
    required: tuple[_Field, ...]
    aliases: dict[str, str]  # person reference field -> its `*_id` column
    ignored: frozenset[str]
    refs: dict[str, str]  # column -> kind it must resolve to, in the same account
    has_source: bool
    big: bool
    stamps: tuple[str, ...]
    content: tuple[str, ...]  # compared to tell unchanged from changed
    reporting: tuple[str, ...]  # derived on write for the sums; never loaded or served
    derive: Callable[[dict[str, Any]], None] | None


# Columns the store derives on write for the ROI and budget sums (entry date per
# SEMANTICS R2, its month, the amount in the account currency per R5), when the
# schema has them.
_REPORTING: Final = ("entry_date", "entry_month", "account_amount_cents")

_SINGULAR: Final = {
    "accounts": "account",
    "users": "user",
    "vendors": "vendor",
    "integrations": "integration",
    "metrics": "metric",
    "initiatives": "initiative",
}


def _column_conv(table: Table, name: str) -> Conv:
    column_type = table.c[name].type
    if isinstance(column_type, String):  # Text included
        return _conv_currency if name == "currency" else _str_conv(column_type.length)
    if isinstance(column_type, Boolean):
        return _conv_bool
    if isinstance(column_type, Integer):
        if name == "id" or name.endswith("_id"):
            return _conv_id
        return _INT64 if isinstance(column_type, BigInteger) else _INT32
    if isinstance(column_type, Float):
        return _conv_number
    if isinstance(column_type, DateTime):
        return _conv_datetime
    if isinstance(column_type, Date):
        return _conv_date
    raise TypeError(f"no bundle conversion for {table.name}.{name}")  # pragma: no cover


def _kind(
    key: str,
    table: Table,
    *,
    account: str,
    required: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    convs: Mapping[str, Conv] | None = None,
    aliases: Mapping[str, str] | None = None,
    ignored: Iterable[str] = (),
    refs: Mapping[str, str] | None = None,
    has_source: bool = False,
    big: bool = False,
    columns: Iterable[str] | None = None,
    stamps: tuple[str, ...] = ("created_at", "updated_at"),
    derive: Callable[[dict[str, Any]], None] | None = None,
) -> _Kind:
    defaults = defaults or {}
    convs = convs or {}
    required = set(required)
    names = (
        list(columns)
        if columns is not None
        else [
            column.name
            for column in table.columns
            if column.name not in stamps
            and column.name not in _REPORTING
            and not (column.name == "account_id" and account in ("initiative", "observation"))
        ]
    )
    fields: dict[str, _Field] = {}
    blank: dict[str, Any] = {}
    for name in names:
        conv = convs.get(name) or _column_conv(table, name)
        fields[name] = _Field(name, name, conv, name in required)
        blank[name] = defaults.get(name)
    for stamp in stamps:
        fields[stamp] = _Field(stamp, stamp, _conv_datetime, False)
    if account in ("initiative", "observation"):
        blank["account_id"] = None
    reporting = tuple(name for name in _REPORTING if name in table.c)
    content = tuple(
        column.name
        for column in table.columns
        if column.name not in stamps and column.name not in reporting
    )
    return _Kind(
        key=key,
        table=table,
        account=account,
        fields=fields,
        convs={name: (spec.column, spec.conv) for name, spec in fields.items()},
        blank=blank,
        required=tuple(fields[name] for name in names if name in required),
        aliases=dict(aliases or {}),
        ignored=frozenset(ignored),
        refs=dict(refs or {}),
        has_source=has_source,
        big=big,
        stamps=stamps,
        content=content,
        reporting=reporting,
        derive=derive,
    )


_SOURCE_PARTS: Final[dict[str, tuple[str, Conv]]] = {
    "type": ("source_type", _str_conv(100)),
    "ref": ("source_ref", _str_conv(500)),
    "connection_id": ("source_connection_id", _conv_id),
}


def _derive_cost(row: dict[str, Any]) -> None:
    if row["cost_category"] is None:
        cost_type = row["cost_type"]
        is_capex = cost_type is not None and cost_type.strip().lower() in CAPEX_COST_TYPES
        row["cost_category"] = "capex" if is_capex else "opex"


def _derive_value(row: dict[str, Any]) -> None:
    if row["provenance"] is None:
        if row["source_connection_id"] is not None:
            row["provenance"] = "synced from a connection"
        elif row["formula_id"] is not None:
            row["provenance"] = "calculated from a formula"
        else:
            row["provenance"] = "entered by hand"


_GIVEN_LENGTH: Final = "given length"  # no column has this name


def _derive_token(row: dict[str, Any]) -> None:
    # SEMANTICS R29: only the hash and the shown prefix are kept, never the secret. Its
    # length is kept until _check_token_issuers, which takes it out of the row.
    secret = row.pop("token")
    row["token_hash"] = hash_token(secret) if secret is not None else None
    row["prefix"] = shown_prefix(secret) if secret is not None else None
    row[_GIVEN_LENGTH] = secret_length(secret) if secret is not None else None


_T = tables
KINDS: Final[dict[str, _Kind]] = {
    kind.key: kind
    for kind in (
        _kind(
            "accounts",
            _T.accounts,
            account="self",
            required=("id", "name"),
            defaults={
                "currency": "USD",
                "api_access": True,
                "fiscal_year_start_month": 1,
                "internal": False,
            },
            convs={"fiscal_year_start_month": _MONTH},
        ),
        _kind(
            "users",
            _T.users,
            account="field",
            required=("id", "account_id", "name", "role"),
            convs={"role": _enum_conv(ROLES)},
        ),
        _kind(
            "tokens",
            _T.tokens,
            account="user",
            required=("user_id", "token"),
            columns=("user_id", "token", "expires_at", "revoked_at"),
            convs={"token": _conv_secret},
            refs={"user_id": "users"},
            stamps=("created_at",),
            derive=_derive_token,
        ),
        _kind(
            "fx_rates",
            _T.fx_rates,
            account="field",
            required=("account_id", "currency", "effective_from", "rate"),
            convs={"rate": _conv_rate},
            stamps=(),
        ),
        _kind("vendors", _T.vendors, account="field", required=("id", "account_id", "name")),
        _kind(
            "integrations",
            _T.integrations,
            account="field",
            required=("id", "account_id", "platform", "status"),
            defaults={"primary_source_categories": [], "metric_categories": [], "simulated": False},
            convs={
                "status": _enum_conv(INTEGRATION_STATUSES),
                "auth_type": _enum_conv(AUTH_TYPES),
                "primary_source_categories": _conv_str_list,
                "metric_categories": _conv_str_list,
                "credentials": _conv_json_object,
                "settings": _conv_json_object,
            },
            aliases={"connected_by": "connected_by_id"},
            refs={"connected_by_id": "users"},
        ),
        _kind(
            "metrics",
            _T.metrics,
            account="field",
            required=("id", "account_id", "metric_key", "name"),
            defaults={"currency_metric": False, "active": True},
        ),
        _kind(
            "initiatives",
            _T.initiatives,
            account="field",
            required=("id", "account_id", "title", "stage"),
            defaults={"is_sample": False},
            convs={"stage": _enum_conv(STAGES)},
            aliases={"owner": "owner_id"},
            refs={"owner_id": "users"},
        ),
        _kind(
            "initiative_notes",
            _T.initiative_notes,
            account="initiative",
            required=("id", "initiative_id", "body"),
            aliases={"author": "author_id"},
            refs={"author_id": "users"},
        ),
        _kind(
            "budget_versions",
            _T.budget_versions,
            account="initiative",
            required=("id", "initiative_id", "effective_from", "status"),
            defaults={
                "capex_cents": 0,
                "opex_cents": 0,
                "opex_cadence": "monthly",
                "source": "manual",
            },
            convs={
                "opex_cadence": _enum_conv(OPEX_CADENCES),
                "source": _enum_conv(BUDGET_SOURCES),
                "status": _enum_conv(BUDGET_STATUSES),
            },
            aliases={"set_by": "set_by_id"},
            refs={"set_by_id": "users"},
        ),
        _kind(
            "cost_entries",
            _T.cost_entries,
            account="initiative",
            big=True,
            has_source=True,
            required=("id", "initiative_id"),
            defaults={"is_estimated": False, "locked": False},
            convs={"cost_category": _enum_conv(COST_CATEGORIES)},
            refs={"vendor_id": "vendors", "source_connection_id": "integrations"},
            derive=_derive_cost,
        ),
        _kind(
            "value_entries",
            _T.value_entries,
            account="initiative",
            big=True,
            has_source=True,
            required=("id", "initiative_id", "status"),
            defaults={"is_estimated": False},
            convs={"status": _enum_conv(VALUE_STATUSES)},
            ignored=("counts_toward_roi",),
            refs={"source_connection_id": "integrations"},
            derive=_derive_value,
        ),
        _kind(
            "observations",
            _T.observations,
            account="observation",
            big=True,
            has_source=True,
            required=("id",),
            defaults={"is_estimated": False},
            convs={"role": _enum_conv(OBSERVATION_ROLES)},
            refs={"source_connection_id": "integrations"},
        ),
        _kind(
            "decisions",
            _T.decisions,
            account="field",
            required=(
                "id",
                "account_id",
                "subject_title",
                "outcome",
                "rationale",
                "stage_before",
                "stage_after",
            ),
            convs={
                "outcome": _enum_conv(OUTCOMES),
                "stage_before": _enum_conv(STAGES),
                "stage_after": _enum_conv(STAGES),
            },
            ignored=("outcome_label", "stage_changed"),
            aliases={"decided_by": "decided_by_id"},
            refs={"decided_by_id": "users"},
        ),
        _kind(
            "assessments",
            _T.assessments,
            account="field",
            required=("id", "account_id", "title", "status"),
            convs={"status": _enum_conv(ASSESSMENT_STATUSES)},
        ),
    )
}
BUNDLE_KEYS: Final = (*KINDS, "delete")
_BIG: Final = tuple(key for key, kind in KINDS.items() if kind.big)
_SMALL_WRITE_ORDER: Final = (
    "accounts",
    "users",
    "tokens",
    "fx_rates",
    "vendors",
    "integrations",
    "metrics",
    "initiatives",
    "initiative_notes",
    "budget_versions",
)
_LATE_WRITE_ORDER: Final = ("decisions", "assessments")


# --------------------------------------------------------------------------- records


class _Problems:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.more = 0

    def add(self, line: str) -> None:
        if len(self.lines) < _MAX_PROBLEMS:
            self.lines.append(line)
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.lines)

    def error(self) -> BundleError:
        lines = list(self.lines)
        if self.more:
            lines.append(f"bundle: {self.more} more problems not listed")
        return BundleError(lines)


class _Rec:
    """One validated record of a small kind (or of a big one, briefly)."""

    __slots__ = ("account", "given_account", "label", "row")

    def __init__(self, label: str, row: dict[str, Any], given_account: int | None) -> None:
        self.label = label
        self.row = row
        self.given_account = given_account
        self.account: int | None = None


def _label(kind: _Kind, raw: dict[str, Any], pos: int) -> str:
    key = kind.key
    if key == "tokens":
        user_id = raw.get("user_id")
        if type(user_id) is int and 0 < user_id <= _MAX_ID:
            return f"tokens[user_id={user_id}]"
    elif key == "fx_rates":
        parts = [raw.get("account_id"), raw.get("currency"), raw.get("effective_from")]
        try:
            _conv_id(parts[0])
            _conv_currency(parts[1])
            _conv_date(parts[2])
        except _Bad:
            pass
        else:
            return f"fx_rates[account_id={parts[0]},currency={parts[1]},effective_from={parts[2]}]"
    else:
        record_id = raw.get("id")
        if type(record_id) is int and 0 < record_id <= _MAX_ID:
            return f"{key}[id={record_id}]"
    return f"{key}[#{pos}]"


def _normalize(kind: _Kind, raw: Any, pos: int, problems: _Problems) -> _Rec | None:
    """Check one record on its own; return its row (columns) or None if it is not an object."""
    if type(raw) is not dict:
        if not isinstance(raw, Mapping):
            problems.add(f"{kind.key}[#{pos}]: {_show(raw)} is not an object")
            return None
        raw = dict(raw)
    label = _label(kind, raw, pos)
    row = kind.blank.copy()
    convs = kind.convs
    failed: set[str] = set()
    given_account: int | None = None
    persons: dict[str, tuple[str, int | None]] | None = None
    source: Any = None
    for name, value in raw.items():
        spec = convs.get(name)
        if spec is not None:
            if value is not None:
                try:
                    row[spec[0]] = spec[1](value)
                except _Bad as exc:
                    problems.add(f"{label}.{name}: {exc}")
                    failed.add(spec[0])
            continue
        if name in kind.ignored:
            continue
        alias_of = kind.aliases.get(name)
        if alias_of is not None:
            try:
                person = _person_id(value)
            except _Bad as exc:
                problems.add(f"{label}.{name}: {exc}")
                failed.add(alias_of)
            else:
                persons = persons or {}
                persons[alias_of] = (name, person)
        elif name == "source" and kind.has_source:
            source = value
        elif name == "account_id" and kind.account in ("initiative", "observation"):
            if value is not None:
                try:
                    given_account = _conv_id(value)
                except _Bad as exc:
                    problems.add(f"{label}.account_id: {exc}")
        else:
            problems.add(f"{label}.{name}: unknown field")
    if persons:
        for column, (name, person) in persons.items():
            if raw.get(column) is not None and column not in failed:
                if person is not None and person != row[column]:
                    problems.add(
                        f"{label}.{name}: id {person} does not match {column} {row[column]}"
                    )
            else:
                row[column] = person
    if source is not None:
        _take_source(label=label, raw=raw, source=source, row=row, failed=failed, problems=problems)
    for required in kind.required:
        if row[required.column] is None and required.column not in failed:
            problems.add(f"{label}.{required.name}: required")
    if kind.derive is not None:
        kind.derive(row)
    return _Rec(label, row, given_account)


def _take_source(
    *,
    label: str,
    raw: dict[str, Any],
    source: Any,
    row: dict[str, Any],
    failed: set[str],
    problems: _Problems,
) -> None:
    """SPEC 2.1 source object, nested; the flattened `source_*` fields mean the same."""
    if type(source) is not dict:
        problems.add(f"{label}.source: {_show(source)} is not an object")
        return
    for part, value in source.items():
        spec = _SOURCE_PARTS.get(part)
        if spec is None:
            problems.add(f"{label}.source.{part}: unknown field")
            continue
        if value is None:
            continue
        column, conv = spec
        try:
            converted = conv(value)
        except _Bad as exc:
            problems.add(f"{label}.source.{part}: {exc}")
            failed.add(column)
            continue
        if (
            column in raw
            and raw[column] is not None
            and column not in failed
            and row[column] != converted
        ):
            problems.add(f"{label}.source.{part}: does not match {column}")
        row[column] = converted


# --------------------------------------------------------------------------- reading


class _Progress:
    def __init__(self, hook: ProgressHook | None, total: int, step: int) -> None:
        self.hook = hook
        self.total = total
        self.step = step
        self.done = 0
        self.reported = 0

    def advance(self, amount: int) -> None:
        self.done += amount
        if self.hook is not None and self.done - self.reported >= self.step:
            self.reported = self.done
            self.hook(min(self.done, self.total), self.total)

    def complete(self) -> None:
        self.done = self.total
        self.finish()

    def finish(self) -> None:
        if self.hook is not None and self.reported != self.done:
            self.reported = self.done
            self.hook(min(self.done, self.total), self.total)


class _CountingReader:
    """File wrapper reporting the bytes of the file read (compressed bytes for .gz)."""

    def __init__(self, raw: IO[bytes], progress: _Progress) -> None:
        self.raw = raw
        self.progress = progress

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.progress.advance(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)


class _BadSource(Exception):
    """A bundle that cannot be read at all; the message is the problem line."""


class _Repeated:
    """A value whose objects gave a name more than once, with the dotted paths of those names.

    JSON leaves the meaning of a repeated name open (RFC 8259, 4); a bundle that
    has one is refused rather than read as whichever copy came last.
    """

    __slots__ = ("names", "value")

    def __init__(self, value: Any, names: list[str]) -> None:
        self.value = value
        self.names = names


# No field of a record nests anywhere near this; a file that does is hostile, and building
# it would exhaust the interpreter's stack (a traceback, not a problem line).
MAX_NESTING: Final = 64


class _TooDeep(Exception):
    """Raised where the nesting passes MAX_NESTING; the record's label is added above."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        # Only the record's own field is named: a deeper name (a stored setting's) is not said.
        self.field = path.split(".", maxsplit=1)[0].split("[", maxsplit=1)[0]


def _deeper(path: str, depth: int) -> int:
    if depth >= MAX_NESTING:
        raise _TooDeep(path)
    return depth + 1


def _build_map(
    events: Iterator[tuple[str, Any]], repeated: list[str], path: str, depth: int = 1
) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    key = ""
    for event, value in events:
        if event == "map_key":
            key = value
            if key in obj:
                repeated.append(path + key)
        elif event == "end_map":
            return obj
        elif event == "start_map":
            inner = _deeper(path + key, depth)
            obj[key] = _build_map(events, repeated, f"{path}{key}.", inner)
        elif event == "start_array":
            inner = _deeper(path + key, depth)
            obj[key] = _build_list(events, repeated, f"{path}{key}", inner)
        else:
            obj[key] = value
    return obj  # pragma: no cover - the parser raises on truncated input


def _build_list(
    events: Iterator[tuple[str, Any]], repeated: list[str], path: str, depth: int = 1
) -> list[Any]:
    items: list[Any] = []
    for event, value in events:
        if event == "end_array":
            return items
        if event == "start_map":
            inner = _deeper(path, depth)
            items.append(_build_map(events, repeated, f"{path}[#{len(items)}].", inner))
        elif event == "start_array":
            inner = _deeper(path, depth)
            items.append(_build_list(events, repeated, f"{path}[#{len(items)}]", inner))
        else:
            items.append(value)
    return items  # pragma: no cover


def _build_value(event: str, events: Iterator[tuple[str, Any]], label: str) -> Any:
    """An object or array whose start event was just read; a _Repeated if a name repeats.
    `label` names it in a problem (`cost_entries[#3]`)."""
    repeated: list[str] = []
    try:
        value: Any = (
            _build_map(events, repeated, "")
            if event == "start_map"
            else _build_list(events, repeated, "")
        )
    except _TooDeep as exc:
        where = f"{label}.{exc.field}" if exc.field else label
        raise _BadSource(f"bundle: {where} nests deeper than {MAX_NESTING} levels") from None
    return _Repeated(value, repeated) if repeated else value


def _array_items(events: Iterator[tuple[str, Any]], key: str) -> Iterator[Any]:
    # One outer event an item: a nested one is read to its end by _build_value.
    for pos, (event, value) in enumerate(events):
        if event in ("start_map", "start_array"):
            yield _build_value(event, events, f"{key}[#{pos}]")
        elif event == "end_array":
            return
        else:
            yield value


def _walk_events(events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, int, Any]]:
    """(key, position, item) for every element of every top-level array, in file order.

    Each top-level key is announced first with position -2 (even an empty
    array's). A top-level value that is not an array comes whole, with
    position -1. One element is built at a time, so a million-entry array streams.
    The input is read to its end: a bundle is exactly one JSON object.
    """
    first = next(events, None)
    if first is None or first[0] != "start_map":
        raise _BadSource("bundle: not a JSON object")
    key = ""
    for event, value in events:
        if event == "map_key":
            key = value
            yield key, -2, None
        elif event == "start_array":
            for pos, item in enumerate(_array_items(events, key)):
                yield key, pos, item
        elif event == "start_map":
            yield key, -1, _build_value(event, events, key)
        elif event == "end_map":
            break
        else:
            yield key, -1, value
    # Past the object only whitespace may follow; the parser refuses anything else
    # (a second document, trailing text), which would otherwise go unread.
    try:
        for _ in events:
            break
        else:
            return
    except ijson.JSONError:
        pass
    raise _BadSource(
        "bundle: text follows the JSON object (a second document or trailing text); "
        "a bundle is exactly one JSON object"
    )


def _parser_error(exc: Exception) -> str:
    """What the parser says is wrong, without the excerpt of the file it quotes after it: that
    excerpt is the bundle's own text, secrets included (SEMANTICS R15)."""
    message = exc.args[0] if exc.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    lines = str(message).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


class _Source:
    """A bundle to read twice: a parsed mapping, or a .json / .json.gz file."""

    def __init__(
        self, source: Mapping[str, Any] | str | os.PathLike[str], hook: ProgressHook | None
    ) -> None:
        self.mapping: Mapping[str, Any] | None = None
        self.path: str | None = None
        if isinstance(source, Mapping):
            self.mapping = source
            records = sum(len(v) for v in source.values() if isinstance(v, list | tuple))
            self.progress = _Progress(hook, 2 * records, _PROGRESS_RECORDS)
        else:
            self.path = os.fspath(source)
            try:
                size = os.path.getsize(self.path)
            except OSError as exc:
                raise _BadSource(f"bundle: cannot read {self.path} ({exc.strerror})") from None
            self.progress = _Progress(hook, 2 * size, _PROGRESS_BYTES)

    def items(self, keys: Iterable[str] | None = None) -> Iterator[tuple[str, int, Any]]:
        """Stream (key, position, item); `keys` limits a mapping source to those keys."""
        if self.mapping is not None:
            yield from self._mapping_items(self.mapping, keys)
        else:
            yield from self._file_items()
        self.progress.finish()

    def big_items(self, keys: tuple[str, ...]) -> Iterator[tuple[str, int, Any]]:
        """Stream the items of these big keys again (pass 2).

        With one big key in a file, ijson's C pipeline builds the items (about
        twice as fast as building them here); otherwise the general walk.
        """
        if self.mapping is not None or len(keys) != 1:
            yield from self.items(keys)
            return
        key = keys[0]
        with self._open() as stream:
            for pos, item in enumerate(ijson.items(stream, f"{key}.item", use_float=False)):
                yield key, pos, item
        self.progress.finish()

    def _mapping_items(
        self, mapping: Mapping[str, Any], keys: Iterable[str] | None
    ) -> Iterator[tuple[str, int, Any]]:
        wanted = None if keys is None else frozenset(keys)
        for key, value in mapping.items():
            if wanted is not None and key not in wanted:
                continue
            yield key, -2, None
            if isinstance(value, list | tuple):
                for pos, item in enumerate(value):
                    yield key, pos, item
                    self.progress.advance(1)
            else:
                yield key, -1, value

    def _file_items(self) -> Iterator[tuple[str, int, Any]]:
        with self._open() as stream:
            yield from _walk_events(iter(ijson.basic_parse(stream, use_float=False)))

    @contextlib.contextmanager
    def _open(self) -> Iterator[Any]:
        """The file's JSON bytes (gunzipped when it starts with the gzip magic)."""
        assert self.path is not None
        try:
            with open(self.path, "rb") as raw:
                head = raw.read(2)
                raw.seek(0)
                counting = _CountingReader(raw, self.progress)
                if head == b"\x1f\x8b":
                    yield gzip.GzipFile(fileobj=counting, mode="rb")
                else:
                    yield counting
        except ijson.JSONError as exc:
            raise _BadSource(f"bundle: not valid JSON ({_parser_error(exc)})") from None
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise _BadSource(f"bundle: not a valid gzip file ({exc})") from None
        except OSError as exc:
            raise _BadSource(f"bundle: cannot read {self.path} ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise _BadSource(f"bundle: not valid JSON ({exc.reason})") from None


# --------------------------------------------------------------------------- the store


def _chunks(values: Iterable[Any], size: int = _BATCH) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _ids_to_accounts(conn: Connection, table: Table, ids: Iterable[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for batch in _chunks(sorted(ids)):
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


class _Bulk:
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


@dataclass(frozen=True)
class _Account:
    currency: str
    internal: bool


_MISSING: Final[Any] = object()


def _moved(record_id: int, given: str | None, account: int, stored_account: int) -> str:
    """Why an upsert is refused: the row would move to another account (BUNDLE load rules)."""
    if given is None:
        return f"id {record_id} belongs to another account"
    return (
        f"{given} is in account {account}, but id {record_id} belongs to account "
        f"{stored_account}: a row never moves to another account"
    )


# --------------------------------------------------------------------------- the load


class _Load:
    def __init__(self, conn: Connection, source: _Source, now: datetime) -> None:
        self.conn = conn
        self.source = source
        self.now = now
        self.problems = _Problems()
        self.report = LoadReport(
            inserted=dict.fromkeys(KINDS, 0),
            updated=dict.fromkeys(KINDS, 0),
            unchanged=dict.fromkeys(KINDS, 0),
            deleted=dict.fromkeys(KINDS, 0),
        )
        self.small: dict[str, list[_Rec]] = {key: [] for key in KINDS if not KINDS[key].big}
        self.deletes: dict[str, set[int]] = {}
        self.seen_keys: set[str] = set()
        # Big kinds: ids seen, and per combination of the fields that reach
        # other records, the ids carrying it (capped) for naming problems.
        self.big_ids: dict[str, set[int]] = {key: set() for key in _BIG}
        self.unlinked: dict[str, set[int]] = {}  # rows this load's deletes unlinked, by kind
        self.big_groups: dict[str, dict[tuple[Any, ...], list[int]]] = {key: {} for key in _BIG}
        self.big_existing: dict[str, dict[tuple[Any, ...], list[int]]] = {key: {} for key in _BIG}
        self.pending: dict[str, dict[int, tuple[Any, ...]]] = {key: {} for key in _BIG}
        # Filled at the end of pass 1.
        self.present: dict[str, dict[int, int | None]] = {}
        # Small kinds: the store's (account, initiative) of each id the bundle gives.
        self.stored: dict[str, dict[int, tuple[int, int | None]]] = {}
        self.accounts: dict[int, _Account] = {}
        self.fx_pairs: set[tuple[int, str]] = set()
        self.fx_needed: dict[tuple[int, str], list[tuple[str, str]]] = {}
        self.metric_keys: dict[int, str] = {}
        self.stored_decisions: dict[int, Any] = {}
        self.vendor_registry: _VendorRegistry | None = None
        self.bulk: dict[tuple[str, str], _Bulk] = {}
        self.fx_tables: dict[int, FxTable] = {}
        self.fx_changed: set[int] = set()  # accounts whose FX rates or currency changed
        self.new_accounts: set[int] = set()
        self.tombstones: list[tuple[str, int, int]] = []  # (list, account, id) removed

    # ----------------------------------------------------------------- pass 1

    def validate(self) -> None:
        try:
            for key, pos, item in self.source.items():
                self._take(key, pos, item)
        except _BadSource as exc:
            self.problems.add(str(exc))
            return
        for key in _BIG:
            self._flush_existing(key)
        self._check()

    def _take(self, key: str, pos: int, item: Any) -> None:
        if pos == -2:
            if key in self.seen_keys:
                # JSON leaves a repeated name's meaning open: refuse it rather than guess.
                self.problems.add(f"bundle: the key {key!r} is given more than once")
            elif key not in BUNDLE_KEYS:
                self.problems.add(f"bundle: unknown key {key!r}")
            self.seen_keys.add(key)
            return
        if type(item) is _Repeated:
            # Only where the value is read: a record, or the delete object. Anything
            # else (an unknown key, an array for a record) is refused for what it is.
            where = None
            if key in KINDS and pos >= 0 and type(item.value) is dict:
                where = _label(KINDS[key], item.value, pos)
            elif key == "delete" and pos == -1:
                where = key
            if where is not None:
                for name in item.names:
                    self.problems.add(f"{where}.{name}: given more than once")
            item = item.value
        if key not in KINDS:
            if key == "delete":
                if pos == -1:
                    self._take_delete(item)
                elif pos == 0:
                    self.problems.add("bundle: 'delete' must be an object")
            return
        kind = KINDS[key]
        if pos == -1:
            if item is not None:
                self.problems.add(f"bundle: {key!r} must be an array")
            return
        rec = _normalize(kind, item, pos, self.problems)
        if rec is None:
            return
        if kind.big:
            self._take_big(kind, rec)
        else:
            self.small[key].append(rec)

    def _take_delete(self, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, Mapping):
            self.problems.add("bundle: 'delete' must be an object")
            return
        for kind_key, ids in value.items():
            if kind_key == "decisions":
                self.problems.add("delete.decisions: a decision is never deleted (SPEC 3)")
                continue
            if kind_key == "fx_rates":
                continue  # no id to delete by
            if kind_key not in _DELETABLE:
                self.problems.add(f"delete.{kind_key}: not a kind that can be deleted")
                continue
            if not isinstance(ids, list | tuple):
                self.problems.add(f"delete.{kind_key}: {_show(ids)} is not an array of ids")
                continue
            chosen = self.deletes.setdefault(kind_key, set())
            for pos, record_id in enumerate(ids):
                try:
                    chosen.add(_conv_id(record_id))
                except _Bad as exc:
                    self.problems.add(f"delete.{kind_key}[#{pos}]: {exc}")

    def _take_big(self, kind: _Kind, rec: _Rec) -> None:
        row = rec.row
        record_id = row["id"]
        if record_id is None:
            return
        ids = self.big_ids[kind.key]
        if record_id in ids:
            self.problems.add(f"{rec.label}.id: duplicate id {record_id} in this bundle")
            return
        ids.add(record_id)
        owner = (row["initiative_id"], row.get("metric_id"), rec.given_account)
        group_key = (*owner, row.get("currency"), row.get("vendor_id"), row["source_connection_id"])
        group = self.big_groups[kind.key].get(group_key)
        if group is None:
            self.big_groups[kind.key][group_key] = [record_id]
        elif len(group) < _IDS_PER_GROUP:
            group.append(record_id)
        pending = self.pending[kind.key]
        pending[record_id] = owner
        if len(pending) >= _BATCH:
            self._flush_existing(kind.key)

    def _flush_existing(self, key: str) -> None:
        """Look up a batch of big-kind ids already stored: whose account are they?"""
        pending = self.pending[key]
        if not pending:
            return
        table = KINDS[key].table
        query = select(table.c.id, table.c.account_id, table.c.initiative_id).where(
            table.c.id.in_(list(pending))
        )
        existing = self.big_existing[key]
        for record_id, account_id, initiative_id in self.conn.execute(query):
            group_key = (*pending[record_id], account_id, initiative_id)
            group = existing.setdefault(group_key, [])
            if len(group) < _IDS_PER_GROUP:
                group.append(record_id)
        pending.clear()

    # ----------------------------------------------------------------- cross checks

    def _check(self) -> None:
        self._check_duplicates()
        self._load_stored()
        self._load_present()
        self._resolve_small_accounts()
        self._check_stored_ids()
        for key, recs in self.small.items():
            kind = KINDS[key]
            for rec in recs:
                self._check_refs(kind, rec)
        self._check_tokens()
        self._check_vendors()
        self._check_integrations()
        self._check_decisions()
        for key in _BIG:
            self._check_big(key)
        self._check_fx()

    def _check_duplicates(self) -> None:
        for key, recs in self.small.items():
            seen: set[Any] = set()
            for rec in recs:
                row = rec.row
                if key == "tokens":
                    ident: Any = row["token_hash"]
                    what = "token"
                    field_name = "token"
                elif key == "fx_rates":
                    ident = (row["account_id"], row["currency"], row["effective_from"])
                    what = "rate for this account, currency and date"
                    field_name = "effective_from"
                else:
                    ident = row["id"]
                    what = f"id {ident}"
                    field_name = "id"
                if ident is None or (isinstance(ident, tuple) and None in ident):
                    continue
                if ident in seen:
                    self.problems.add(f"{rec.label}.{field_name}: duplicate {what} in this bundle")
                seen.add(ident)

    def _referenced(self) -> dict[str, set[int]]:
        wanted: dict[str, set[int]] = {target: set() for target in _SINGULAR}
        for key, recs in self.small.items():
            kind = KINDS[key]
            for rec in recs:
                row = rec.row
                for column, target in kind.refs.items():
                    if row[column] is not None:
                        wanted[target].add(row[column])
                if kind.account == "field" and row["account_id"] is not None:
                    wanted["accounts"].add(row["account_id"])
                if kind.account == "initiative" and row["initiative_id"] is not None:
                    wanted["initiatives"].add(row["initiative_id"])
                if rec.given_account is not None:
                    wanted["accounts"].add(rec.given_account)
                if key == "decisions" and row["initiative_id"] is not None:
                    wanted["initiatives"].add(row["initiative_id"])
                if key == "vendors" and row["merged_into_id"] is not None:
                    wanted["vendors"].add(row["merged_into_id"])
        for key in _BIG:
            groups = list(self.big_groups[key]) + [g[:3] for g in self.big_existing[key]]
            for group in groups:
                initiative_id, metric_id, given_account = group[:3]
                if initiative_id is not None:
                    wanted["initiatives"].add(initiative_id)
                if metric_id is not None:
                    wanted["metrics"].add(metric_id)
                if given_account is not None:
                    wanted["accounts"].add(given_account)
                if len(group) == 6:
                    if group[4] is not None:
                        wanted["vendors"].add(group[4])
                    if group[5] is not None:
                        wanted["integrations"].add(group[5])
        return wanted

    def _load_stored(self) -> None:
        """The store's account (and initiative) of every id the bundle's small kinds give."""
        for key, recs in self.small.items():
            if key in ("accounts", "tokens", "fx_rates"):
                continue
            table = KINDS[key].table
            ids = {rec.row["id"] for rec in recs if rec.row["id"] is not None}
            has_initiative = "initiative_id" in table.c
            stored: dict[int, tuple[int, int | None]] = {}
            for batch in _chunks(sorted(ids)):
                columns = [table.c.id, table.c.account_id]
                if has_initiative:
                    columns.append(table.c.initiative_id)
                for row in self.conn.execute(select(*columns).where(table.c.id.in_(batch))):
                    stored[row[0]] = (row[1], row[2] if has_initiative else None)
            self.stored[key] = stored

    def _load_present(self) -> None:
        """Which rows exist after this bundle (bundle or store, minus its deletes), by account.

        A row of the bundle whose own account is refused (no such account, or not the
        account the store holds it under) is present with account None: its problem is
        named once, on its own account_id, and records that refer to it are not checked
        against an account it cannot have.
        """
        wanted = self._referenced()
        for target in ("users", "vendors", "integrations", "metrics", "initiatives"):
            present: dict[int, int | None] = {}
            for rec in self.small[target]:
                if rec.row["id"] is not None:
                    present[rec.row["id"]] = rec.row["account_id"]
            deleted = self.deletes.get(target, set())
            for record_id, (stored_account, _) in self.stored[target].items():
                moved = present.get(record_id) not in (None, stored_account)
                if moved and record_id not in deleted:
                    present[record_id] = None
            missing = wanted[target] - present.keys() - deleted
            present.update(_ids_to_accounts(self.conn, KINDS[target].table, missing))
            self.present[target] = present
        # Accounts: those of the bundle, then those the store holds.
        for rec in self.small["accounts"]:
            row = rec.row
            if row["id"] is not None:
                self.accounts[row["id"]] = _Account(row["currency"] or "USD", bool(row["internal"]))
        for present in self.present.values():
            wanted["accounts"].update(a for a in present.values() if a is not None)
        missing_accounts = wanted["accounts"] - self.accounts.keys()
        table = tables.accounts
        for batch in _chunks(sorted(missing_accounts)):
            query = select(table.c.id, table.c.currency, table.c.internal).where(
                table.c.id.in_(batch)
            )
            for account_id, currency, internal in self.conn.execute(query):
                self.accounts[account_id] = _Account(currency, bool(internal))
        self.present["accounts"] = {account_id: account_id for account_id in self.accounts}
        for target in ("users", "vendors", "integrations", "metrics", "initiatives"):
            present = self.present[target]
            for record_id, account_id in present.items():
                if account_id is not None and account_id not in self.accounts:
                    present[record_id] = None

    def _initiative_account(self, initiative_id: int) -> Any:
        return self.present["initiatives"].get(initiative_id, _MISSING)

    def _entry_account(
        self,
        mode: str,
        initiative_id: int | None,
        metric_id: int | None,
        given_account: int | None,
    ) -> tuple[int | None, list[tuple[str, str]]]:
        """The account of a record that hangs off an initiative (or a metric)."""
        found: list[tuple[str, str]] = []
        by_initiative = by_metric = None
        # An initiative or metric present with account None is itself refused, and named
        # there: the record's account is unknown, and nothing is said about it here.
        if initiative_id is not None:
            account = self._initiative_account(initiative_id)
            if account is None:
                return None, found
            if account is _MISSING:
                found.append(("initiative_id", f"no initiative {initiative_id}"))
            by_initiative = None if account is _MISSING else account
        if mode == "observation" and metric_id is not None:
            account = self.present["metrics"].get(metric_id, _MISSING)
            if account is None:
                return None, found
            if account is _MISSING:
                found.append(("metric_id", f"no metric {metric_id}"))
            by_metric = None if account is _MISSING else account
            if by_initiative is not None and by_metric is not None and by_initiative != by_metric:
                found.append(("metric_id", f"no metric {metric_id} in account {by_initiative}"))
        if mode == "initiative":
            if (
                by_initiative is not None
                and given_account is not None
                and given_account != by_initiative
            ):
                found.append(
                    (
                        "account_id",
                        f"initiative {initiative_id} is in account "
                        f"{by_initiative}, not {given_account}",
                    )
                )
            return by_initiative, found
        if by_initiative is not None or by_metric is not None:
            account = by_initiative if by_initiative is not None else by_metric
            if given_account is not None and given_account != account:
                found.append(
                    (
                        "account_id",
                        f"{given_account} does not match account "
                        f"{account} of the record's initiative or metric",
                    )
                )
            return account, found
        if initiative_id is None and metric_id is None:
            if given_account is None:
                found.append(
                    ("account_id", "required when neither initiative_id nor metric_id is given")
                )
            elif given_account not in self.accounts:
                found.append(("account_id", f"no account {given_account}"))
            else:
                return given_account, found
        return None, found

    def _resolve_small_accounts(self) -> None:
        for key, recs in self.small.items():
            kind = KINDS[key]
            for rec in recs:
                row = rec.row
                if kind.account == "self":
                    rec.account = row["id"]
                elif kind.account == "field":
                    account_id = row["account_id"]
                    if account_id is not None and account_id not in self.accounts:
                        self.problems.add(f"{rec.label}.account_id: no account {account_id}")
                    elif account_id is not None:
                        rec.account = account_id
                elif kind.account == "user":
                    user_id = row["user_id"]
                    if user_id is not None:
                        account = self.present["users"].get(user_id, _MISSING)
                        if account is _MISSING:
                            self.problems.add(f"{rec.label}.user_id: no user {user_id}")
                        else:
                            rec.account = account
                elif kind.account == "initiative" and row["initiative_id"] is not None:
                    account, found = self._entry_account(
                        "initiative", row["initiative_id"], None, rec.given_account
                    )
                    for field_name, message in found:
                        self.problems.add(f"{rec.label}.{field_name}: {message}")
                    rec.account = account
                    row["account_id"] = account

    def _check_refs(self, kind: _Kind, rec: _Rec) -> None:
        account = rec.account
        if account is None:
            return
        row = rec.row
        for column, target in kind.refs.items():
            value = row[column]
            if value is None or (kind.key == "tokens" and column == "user_id"):
                continue
            found = self.present[target].get(value, _MISSING)
            if found is None:
                continue  # the target itself is broken and reported
            if found is _MISSING or found != account:
                name = "source.connection_id" if column == "source_connection_id" else column
                self.problems.add(
                    f"{rec.label}.{name}: no {_SINGULAR[target]} {value} in account {account}"
                )
        currency = row.get("currency")
        if kind.key not in ("accounts", "fx_rates") and currency is not None:
            self._need_fx(account, currency, rec.label, "currency")

    def _need_fx(self, account: int, currency: str, label: str, field_name: str) -> None:
        # SEMANTICS R5: a currency with no rate at all cannot be loaded.
        info = self.accounts.get(account)
        if info is None or currency == info.currency:
            return
        needed = self.fx_needed.setdefault((account, currency), [])
        if len(needed) < _IDS_PER_GROUP:
            needed.append((label, field_name))

    def _gone(self, key: str, record_id: int, initiative_id: int | None) -> bool:
        """Is this stored row removed by the bundle's deletes before the upsert?"""
        if record_id in self.deletes.get(key, ()):
            return True
        return (
            key in _INITIATIVE_CHILDREN
            and initiative_id is not None
            and initiative_id in self.deletes.get("initiatives", ())
        )

    def _check_stored_ids(self) -> None:
        """An upsert never moves a row to another account (BUNDLE load rules)."""
        for key, stored in self.stored.items():
            kind = KINDS[key]
            by_id = {rec.row["id"]: rec for rec in self.small[key] if rec.row["id"] is not None}
            for record_id, (stored_account, stored_initiative) in stored.items():
                rec = by_id[record_id]
                # Decisions are not deleted with their initiative.
                parent = None if key == "decisions" else stored_initiative
                if self._gone(key, record_id, parent):
                    continue
                if rec.account is not None and stored_account != rec.account:
                    field_name, given = self._account_field(kind, rec.row.get("initiative_id"))
                    self.problems.add(
                        f"{rec.label}.{field_name}: "
                        + _moved(record_id, given, rec.account, stored_account)
                    )
                    rec.account = None  # its references are not checked in an account it lacks

    @staticmethod
    def _account_field(
        kind: _Kind, initiative_id: int | None, metric_id: int | None = None
    ) -> tuple[str, str | None]:
        """The field that gave a record its account, and what it names (None: the account)."""
        if kind.account in ("initiative", "observation") and initiative_id is not None:
            return "initiative_id", f"initiative {initiative_id}"
        if kind.account == "observation" and metric_id is not None:
            return "metric_id", f"metric {metric_id}"
        return "account_id", None

    def _check_tokens(self) -> None:
        self._check_token_issuers()
        recs = [rec for rec in self.small["tokens"] if rec.row["token_hash"] is not None]
        by_hash = {rec.row["token_hash"]: rec for rec in recs}
        table = tables.tokens
        for batch in _chunks(sorted(by_hash)):
            query = select(table.c.token_hash, table.c.user_id).where(table.c.token_hash.in_(batch))
            for token_hash, user_id in self.conn.execute(query):
                rec = by_hash[token_hash]
                if rec.row["user_id"] is not None and user_id != rec.row["user_id"]:
                    self.problems.add(
                        f"{rec.label}.token: this token is already issued to another user"
                    )

    def _check_token_issuers(self) -> None:
        """A token that can authenticate: 32 bytes of secret (R29), an Owner's or Admin's (SPEC 5).

        A revoked token opens nothing, so it is taken as given: a bundle can revoke
        any stored token, whatever its secret or its user's role now.
        """
        live = []
        for rec in self.small["tokens"]:
            length = rec.row.pop(_GIVEN_LENGTH)
            if rec.row["revoked_at"] is not None:
                continue
            live.append(rec)
            if length is not None and length < SECRET_MIN_LENGTH:
                self.problems.add(
                    f"{rec.label}.token: too short to hold 32 bytes of entropy (SEMANTICS R29): "
                    f"the secret after the {TOKEN_PREFIX!r} prefix (or the whole token, without "
                    f"one) needs at least {SECRET_MIN_LENGTH} characters, as 32 random bytes "
                    f"take in URL-safe base64; it has {length}"
                )
        roles = {rec.row["id"]: rec.row["role"] for rec in self.small["users"]}
        wanted = {
            rec.row["user_id"]
            for rec in live
            if rec.account is not None and rec.row["user_id"] not in roles
        }
        table = tables.users
        for batch in _chunks(sorted(wanted)):
            query = select(table.c.id, table.c.role).where(table.c.id.in_(batch))
            for user_id, role in self.conn.execute(query):
                roles[user_id] = role
        for rec in live:
            user_id = rec.row["user_id"]
            role = roles.get(user_id) if rec.account is not None else None
            if role is not None and role not in ISSUING_ROLES:
                self.problems.add(
                    f"{rec.label}.user_id: user {user_id} is a {role}; tokens are issued "
                    "only to an Owner or Admin (SPEC 5)"
                )

    def _check_vendors(self) -> None:
        recs = self.small["vendors"]
        if not any(rec.row["merged_into_id"] is not None for rec in recs):
            return
        merged: dict[int, int | None] = {}
        for rec in recs:
            if rec.row["id"] is not None:
                merged[rec.row["id"]] = rec.row["merged_into_id"]
        # Follow chains through the store too, to find cycles.
        table = tables.vendors
        frontier = {target for target in merged.values() if target is not None} - merged.keys()
        while frontier:
            found: dict[int, int | None] = {}
            for batch in _chunks(sorted(frontier)):
                query = select(table.c.id, table.c.merged_into_id).where(table.c.id.in_(batch))
                found.update({row.id: row.merged_into_id for row in self.conn.execute(query)})
            for row_id in frontier:
                merged[row_id] = found.get(row_id)
            frontier = {t for t in found.values() if t is not None} - merged.keys()
        for rec in recs:
            start = rec.row["id"]
            target = rec.row["merged_into_id"]
            if start is None or target is None or rec.account is None:
                continue
            if target == start:
                self.problems.add(
                    f"{rec.label}.merged_into_id: a vendor cannot be merged into itself"
                )
                continue
            seen = {start}
            step: int | None = target
            while step is not None:
                if step in seen:
                    self.problems.add(
                        f"{rec.label}.merged_into_id: merging into vendor {target} makes a cycle"
                    )
                    break
                seen.add(step)
                step = merged.get(step)
            found_account = self.present["vendors"].get(target, _MISSING)
            if found_account is _MISSING or (
                found_account is not None and found_account != rec.account
            ):
                self.problems.add(
                    f"{rec.label}.merged_into_id: no vendor {target} in account {rec.account}"
                )

    def _check_integrations(self) -> None:
        for rec in self.small["integrations"]:
            if rec.row["simulated"] and rec.account is not None:
                info = self.accounts.get(rec.account)
                if info is not None and not info.internal:
                    self.problems.add(
                        f"{rec.label}.simulated: only an internal account can "
                        "hold a simulated connection"
                    )
        # The same rule from the account's side: one loaded again as not internal must not
        # keep a stored simulated connection the bundle neither deletes nor gives again.
        given = {rec.row["id"] for rec in self.small["integrations"]}
        going = self.deletes.get("integrations", set())
        external = {
            rec.row["id"]: rec
            for rec in self.small["accounts"]
            if rec.row["id"] is not None and not rec.row["internal"]
        }
        table = tables.integrations
        for batch in _chunks(sorted(external)):
            query = (
                select(table.c.account_id, table.c.id)
                .where(table.c.account_id.in_(batch), table.c.simulated.is_(True))
                .order_by(table.c.id)
            )
            for account_id, integration_id in self.conn.execute(query):
                if integration_id not in given and integration_id not in going:
                    self.problems.add(
                        f"{external[account_id].label}.internal: false, but its connection "
                        f"{integration_id} is simulated, which only an internal account can "
                        "hold (SPEC 2.9)"
                    )

    def _check_decisions(self) -> None:
        """SPEC 3: a decision never changes once written; its initiative must resolve."""
        recs = [rec for rec in self.small["decisions"] if rec.row["id"] is not None]
        by_id = {rec.row["id"]: rec for rec in recs}
        table = tables.decisions
        for batch in _chunks(sorted(by_id)):
            for stored in self.conn.execute(select(table).where(table.c.id.in_(batch))):
                self.stored_decisions[stored.id] = stored._mapping
        kind = KINDS["decisions"]
        for rec in recs:
            row = rec.row
            stored_row = self.stored_decisions.get(row["id"])
            initiative_id = row["initiative_id"]
            if stored_row is not None and stored_row["account_id"] == rec.account:
                unlinked = stored_row["initiative_id"] is None
                for column in (*kind.content, *kind.stamps):
                    if column in kind.stamps and column not in row:
                        continue
                    if column == "initiative_id" and (
                        unlinked or stored_row[column] == initiative_id
                    ):
                        continue  # unlinked when its initiative was deleted: still the same
                    if column == "updated_at" and unlinked and row[column] <= stored_row[column]:
                        continue  # the unlinking stamped it later than the bundle knew it
                    if stored_row[column] != row[column]:
                        self.problems.add(
                            f"{rec.label}.{column}: a decision never changes once written"
                        )
                if stored_row["initiative_id"] in (None, initiative_id):
                    continue
            if initiative_id is not None and rec.account is not None:
                account = self._initiative_account(initiative_id)
                if account is _MISSING or (account is not None and account != rec.account):
                    self.problems.add(
                        f"{rec.label}.initiative_id: no initiative "
                        f"{initiative_id} in account {rec.account}"
                    )

    def _check_big(self, key: str) -> None:
        kind = KINDS[key]
        for group_key, ids in self.big_groups[key].items():
            initiative_id, metric_id, given_account, currency, vendor_id, connection_id = group_key
            account, found = self._entry_account(
                kind.account, initiative_id, metric_id, given_account
            )
            if account is not None:
                for column, value in (
                    ("vendor_id", vendor_id),
                    ("source_connection_id", connection_id),
                ):
                    if value is None:
                        continue
                    target = kind.refs[column]
                    found_account = self.present[target].get(value, _MISSING)
                    if found_account is _MISSING or (
                        found_account is not None and found_account != account
                    ):
                        name = (
                            "source.connection_id" if column == "source_connection_id" else column
                        )
                        found.append((name, f"no {_SINGULAR[target]} {value} in account {account}"))
                if currency is not None:
                    for record_id in ids:
                        self._need_fx(account, currency, f"{key}[id={record_id}]", "currency")
            for field_name, message in found:
                for record_id in ids:
                    self.problems.add(f"{key}[id={record_id}].{field_name}: {message}")
        deleted = self.deletes.get(key, set())
        deleted_initiatives = self.deletes.get("initiatives", set())
        for group_key, ids in self.big_existing[key].items():
            initiative_id, metric_id, given_account, stored_account, stored_initiative = group_key
            if stored_initiative is not None and stored_initiative in deleted_initiatives:
                continue
            account, _ = self._entry_account(kind.account, initiative_id, metric_id, given_account)
            if account is None or account == stored_account:
                continue
            field_name, given = self._account_field(kind, initiative_id, metric_id)
            for record_id in ids:
                if record_id not in deleted:
                    self.problems.add(
                        f"{key}[id={record_id}].{field_name}: "
                        + _moved(record_id, given, account, stored_account)
                    )

    def _check_fx(self) -> None:
        if not self.fx_needed:
            return
        for rec in self.small["fx_rates"]:
            row = rec.row
            if row["account_id"] is not None and row["currency"] is not None:
                self.fx_pairs.add((row["account_id"], row["currency"]))
        table = tables.fx_rates
        accounts = sorted({account for account, _ in self.fx_needed})
        for batch in _chunks(accounts):
            query = (
                select(table.c.account_id, table.c.currency)
                .distinct()
                .where(table.c.account_id.in_(batch))
            )
            self.fx_pairs.update((a, c) for a, c in self.conn.execute(query))
        for (account, currency), labels in self.fx_needed.items():
            if (account, currency) not in self.fx_pairs:
                for label, field_name in labels:
                    self.problems.add(
                        f"{label}.{field_name}: no FX rate for {currency} in account {account}"
                    )

    # ----------------------------------------------------------------- pass 2

    def write(self) -> None:
        # Read before the metrics are written, to tell a metric given a new key.
        renamed = self._stored_metric_keys(rec.row["id"] for rec in self.small["metrics"])
        self._apply_deletes()
        for key in _SMALL_WRITE_ORDER:
            self._write_small(key)
        self._write_big()
        for key in _LATE_WRITE_ORDER:
            self._write_small(key)
        self._repoint_merged_vendors()
        self._rekey_readings(renamed)
        self._refresh_reporting()
        self._write_tombstones()
        if self.problems:
            raise self.problems.error()
        self.source.progress.complete()

    def _delete_where(self, key: str, column: str, ids: Iterable[int]) -> int:
        table = KINDS[key].table
        served = key in SERVED_LISTS
        count = 0
        for batch in _chunks(sorted(ids)):
            where = table.c[column].in_(batch)
            if served:
                gone = self.conn.execute(select(table.c.account_id, table.c.id).where(where))
                self.tombstones.extend((key, account_id, row_id) for account_id, row_id in gone)
            result = self.conn.execute(delete(table).where(where))
            count += max(result.rowcount, 0)
        return count

    def _write_tombstones(self) -> None:
        """SEMANTICS R34: a tombstone for every served row removed and not given again."""
        given: dict[str, set[int]] = {key: set(ids) for key, ids in self.big_ids.items()}
        for key in SERVED_LISTS:
            if key not in given:
                given[key] = {rec.row["id"] for rec in self.small[key]}
        rows = [
            {"account_id": account_id, "resource": key, "record_id": row_id, "deleted_at": self.now}
            for key, account_id, row_id in self.tombstones
            if row_id not in given[key]
        ]
        for batch in _chunks(rows):
            self.conn.execute(insert(tables.deletions), batch)

    def _apply_deletes(self) -> None:
        deleted = self.report.deleted
        for key in _DELETABLE:
            ids = self.deletes.get(key)
            if not ids:
                continue
            if key == "initiatives":  # its children go with it; its decisions stay, below
                for child in _INITIATIVE_CHILDREN:
                    gone = self._delete_where(child, "initiative_id", ids)
                    if gone:
                        deleted[child] = deleted.get(child, 0) + gone
            deleted[key] = deleted.get(key, 0) + self._delete_where(key, "id", ids)
        # After the deletes, so the rows that went with their initiative are not counted.
        unlinked = self.unlinked
        for key, columns in _UNLINKED_ON_DELETE.items():
            for child, column in columns if self.deletes.get(key) else ():
                changed = self._unlink(child, column, self.deletes[key])
                unlinked.setdefault(child, set()).update(changed)
        for key, row_ids in unlinked.items():
            # A row unlinked twice changed once; one the bundle gives is counted when written
            # (as updated even when given as it now is: the unlinking changed it).
            self.report.updated[key] += len(row_ids - self.big_ids.get(key, set()))

    def _unlink(self, key: str, column: str, ids: set[int]) -> set[int]:
        """Set `column` to null where it names one of `ids`; the ids of the rows changed."""
        table = KINDS[key].table
        changed: set[int] = set()
        for batch in _chunks(sorted(ids)):
            where = table.c[column].in_(batch)
            changed.update(self.conn.execute(select(table.c.id).where(where)).scalars())
            self.conn.execute(
                update(table).where(where).values({column: None, "updated_at": self.now})
            )
        return changed

    def _write_small(self, key: str) -> None:
        kind = KINDS[key]
        rows = []
        for rec in self.small[key]:
            row = dict(rec.row)
            if kind.account in ("initiative", "observation"):
                row["account_id"] = rec.account
            rows.append(row)
        if key == "tokens":
            self._upsert_keyed(kind, rows, ("token_hash",))
        elif key == "fx_rates":
            self._upsert_keyed(kind, rows, ("account_id", "currency", "effective_from"))
        elif key == "decisions":
            self._write_decisions(rows)
        else:
            for batch in _chunks(rows):
                self._upsert_by_id(kind, batch)

    def _write_decisions(self, rows: list[dict[str, Any]]) -> None:
        fresh = []
        for row in rows:
            if row["id"] in self.stored_decisions:
                self.report.unchanged["decisions"] += 1  # checked equal in pass 1
            else:
                row.setdefault("created_at", self.now)
                row.setdefault("updated_at", self.now)
                fresh.append(row)
        for batch in _chunks(fresh):
            self.conn.execute(insert(tables.decisions), batch)
        self.report.inserted["decisions"] += len(fresh)

    def _upsert_keyed(
        self, kind: _Kind, rows: list[dict[str, Any]], key_columns: tuple[str, ...]
    ) -> None:
        """Upsert a kind without an id (tokens by hash, FX rates by account, currency, date)."""
        table = kind.table
        compared = [c for c in kind.content if c not in key_columns]
        inserts: list[dict[str, Any]] = []
        for row in rows:
            condition = [table.c[c] == row[c] for c in key_columns]
            stored = self.conn.execute(select(table).where(*condition)).mappings().first()
            if stored is None:
                for stamp in kind.stamps:
                    row.setdefault(stamp, self.now)
                inserts.append(row)
                continue
            if kind.key == "tokens" and stored["revoked_at"] is not None:
                # Revoked for good (SEMANTICS R29), by `airoi token revoke` or an earlier
                # bundle: loading the token again, as given before, does not bring it back.
                given = row["revoked_at"]
                row["revoked_at"] = min(stored["revoked_at"], given or stored["revoked_at"])
            if all(stored[c] == row[c] for c in compared) and all(
                stored[s] == row[s] for s in kind.stamps if s in row
            ):
                self.report.unchanged[kind.key] += 1
            else:
                changes = {c: row[c] for c in compared}
                changes.update({s: row[s] for s in kind.stamps if s in row})
                self.conn.execute(update(table).where(*condition).values(changes))
                self.report.updated[kind.key] += 1
                if kind.key == "fx_rates":
                    self.fx_changed.add(row["account_id"])
        if inserts:
            self.conn.execute(insert(table), inserts)
            self.report.inserted[kind.key] += len(inserts)
            if kind.key == "fx_rates":
                self.fx_changed.update(row["account_id"] for row in inserts)

    def _upsert_by_id(self, kind: _Kind, rows: list[dict[str, Any]]) -> None:
        """Upsert one batch: unchanged rows are left alone and keep their updated_at."""
        if not rows:
            return
        table = kind.table
        stored_rows = {
            stored["id"]: stored
            for stored in self.conn.execute(
                select(table).where(table.c.id.in_([row["id"] for row in rows]))
            ).mappings()
        }
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        refreshed: list[dict[str, Any]] = []
        content = kind.content
        reporting = kind.reporting
        now = self.now
        for row in rows:
            stored = stored_rows.get(row["id"])
            if stored is None:
                row.setdefault("created_at", now)
                row.setdefault("updated_at", now)
                if reporting:
                    self._derive_reporting(kind.key, row)
                inserts.append(row)
                continue
            if "account_id" in row and stored["account_id"] != row["account_id"]:
                self.problems.add(
                    f"{kind.key}[id={row['id']}].account_id: id {row['id']} "
                    "belongs to another account"
                )
                continue
            same = True
            for column in content:
                if stored[column] != row[column]:
                    same = False
                    break
            if same:
                for stamp in ("created_at", "updated_at"):
                    if stamp in row and stored[stamp] != row[stamp]:
                        same = False
            if kind.key == "accounts" and stored["currency"] != row["currency"]:
                self.fx_changed.add(row["id"])
            row.setdefault("created_at", stored["created_at"])
            if reporting:
                self._derive_reporting(kind.key, row)
            if same:
                if row["id"] in self.unlinked.get(kind.key, ()):
                    self.report.updated[kind.key] += 1  # changed by this load's unlinking
                else:
                    self.report.unchanged[kind.key] += 1
                # Served fields unchanged; the derived sums may still move (new FX rates).
                if reporting and any(stored[c] != row[c] for c in reporting):
                    refreshed.append({"b_id": row["id"], **{c: row[c] for c in reporting}})
                continue
            row.setdefault("updated_at", now)
            row["b_id"] = row.pop("id")
            updates.append(row)
        if inserts:
            self._bulk(kind, "insert").run(self.conn, inserts)
            self.report.inserted[kind.key] += len(inserts)
            if kind.key == "accounts":
                self.new_accounts.update(row["id"] for row in inserts)
        if updates:
            self._bulk(kind, "update").run(self.conn, updates)
            self.report.updated[kind.key] += len(updates)
        if refreshed:
            self._bulk(kind, "reporting").run(self.conn, refreshed)

    def _fx_table(self, account_id: int) -> FxTable:
        table = self.fx_tables.get(account_id)
        if table is None:
            rates: dict[str, list[tuple[date, str]]] = {}
            fx = tables.fx_rates
            query = select(fx.c.currency, fx.c.effective_from, fx.c.rate).where(
                fx.c.account_id == account_id
            )
            for currency, effective_from, rate in self.conn.execute(query):
                rates.setdefault(currency, []).append((effective_from, rate))
            currency = self.conn.execute(
                select(tables.accounts.c.currency).where(tables.accounts.c.id == account_id)
            ).scalar_one()
            table = self.fx_tables[account_id] = FxTable(currency, rates)
        return table

    def _derive_reporting(self, key: str, row: dict[str, Any]) -> None:
        """Entry date (SEMANTICS R2), its month, the amount in account currency (R5)."""
        day = entry_date(row["period_start"], row["created_at"])
        row["entry_date"] = day
        row["entry_month"] = day.replace(day=1)
        amount = row["amount_cents"]
        if amount is None:
            row["account_amount_cents"] = None
            return
        label = f"{key}[id={row.get('id', row.get('b_id'))}]"
        row["account_amount_cents"] = None
        fx = self._fx_table(row["account_id"])
        try:
            converted = fx.convert(amount, row["currency"], day, None)
        except MissingRate as exc:  # pass 1 refuses these; kept as a guard
            self.problems.add(
                f"{label}.currency: no FX rate for {exc.currency} in account {row['account_id']}"
            )
            return
        if not _fits_int64(converted):
            self.problems.add(
                _too_large_converted(label, amount, row["currency"], fx.account_currency)
            )
            return
        row["account_amount_cents"] = converted

    def _check_initiative_currencies(self, account_id: int) -> None:
        """SEMANTICS R4, R5: an initiative's budget row is in its own currency, so every
        currency an initiative of the account is kept in needs a rate; a new account currency
        can leave one without (the account's own currency needed none before)."""
        fx = self._fx_table(account_id)
        initiatives = tables.initiatives
        query = (
            select(initiatives.c.currency)
            .distinct()
            .where(initiatives.c.account_id == account_id, initiatives.c.currency.is_not(None))
        )
        for currency in sorted(self.conn.execute(query).scalars()):
            try:
                fx.rate(currency, date.min)
            except MissingRate:
                self.problems.add(
                    f"accounts[id={account_id}].currency: stored initiatives in {currency} would "
                    f"have no FX rate for {currency} in account {account_id}"
                )

    def _refresh_reporting(self) -> None:
        """Stored entries of an account whose FX rates or currency changed: convert again."""
        for account_id in sorted(self.fx_changed - self.new_accounts):
            self.fx_tables.pop(account_id, None)
            self._check_initiative_currencies(account_id)
            for key in ("cost_entries", "value_entries"):
                kind = KINDS[key]
                if not kind.reporting:
                    continue
                table = kind.table
                last = 0
                while True:
                    query = (
                        select(
                            table.c.id,
                            table.c.amount_cents,
                            table.c.currency,
                            table.c.entry_date,
                            table.c.account_amount_cents,
                        )
                        .where(table.c.account_id == account_id, table.c.id > last)
                        .order_by(table.c.id)
                        .limit(_BATCH)
                    )
                    batch = self.conn.execute(query).all()
                    if not batch:
                        break
                    last = batch[-1].id
                    fx = self._fx_table(account_id)
                    refreshed = []
                    for stored in batch:
                        if stored.amount_cents is None:
                            continue
                        try:
                            converted = fx.convert(
                                stored.amount_cents, stored.currency, stored.entry_date, None
                            )
                        except MissingRate as exc:  # the account changed its currency
                            self.problems.add(
                                f"accounts[id={account_id}].currency: stored {key} in "
                                f"{exc.currency} would have no FX rate for {exc.currency} in "
                                f"account {account_id}"
                            )
                            break
                        if not _fits_int64(converted):
                            label = f"{key}[id={stored.id}]"
                            self.problems.add(
                                _too_large_converted(
                                    label, stored.amount_cents, stored.currency, fx.account_currency
                                )
                            )
                            continue
                        if converted != stored.account_amount_cents:
                            refreshed.append(
                                {
                                    "b_id": stored.id,
                                    "entry_date": stored.entry_date,
                                    "entry_month": stored.entry_date.replace(day=1),
                                    "account_amount_cents": converted,
                                }
                            )
                    self._bulk(kind, "reporting").run(self.conn, refreshed)

    def _bulk(self, kind: _Kind, what: str) -> _Bulk:
        """The insert (every column) or update by id (every column but id) of a kind."""
        bulk = self.bulk.get((kind.key, what))
        if bulk is None:
            table = kind.table
            if what == "insert":
                bulk = _Bulk(
                    self.conn, insert(table), [c.name for c in table.columns], copy_into=table
                )
            elif what == "reporting":
                statement = update(table).where(table.c.id == bindparam("b_id"))
                bulk = _Bulk(self.conn, statement, kind.reporting)
            else:
                statement = update(table).where(table.c.id == bindparam("b_id"))
                bulk = _Bulk(
                    self.conn, statement, [c.name for c in table.columns if c.name != "id"]
                )
            self.bulk[(kind.key, what)] = bulk
        return bulk

    # ---- big kinds, streamed a second time

    def _write_big(self) -> None:
        if not any(self.big_ids[key] for key in _BIG):
            return
        self._load_metric_keys()
        batches: dict[str, list[dict[str, Any]]] = {key: [] for key in _BIG}
        problems = self.problems
        try:
            present = tuple(key for key in _BIG if self.big_ids[key])
            for key, pos, item in self.source.big_items(present):
                kind = KINDS.get(key)
                if kind is None or not kind.big or pos < 0:
                    continue
                rec = _normalize(kind, item, pos, problems)
                if rec is None or rec.row["id"] is None:
                    continue
                row = rec.row
                account, found = self._entry_account(
                    kind.account, row["initiative_id"], row.get("metric_id"), rec.given_account
                )
                if account is None or found:
                    problems.add(f"{rec.label}: changed while it was being loaded")
                    continue
                row["account_id"] = account
                batch = batches[key]
                batch.append(row)
                if len(batch) >= _BATCH:
                    self._flush_big(kind, batch)
                    batch.clear()
        except _BadSource as exc:
            problems.add(str(exc))
        if problems:
            raise problems.error()
        for key, batch in batches.items():
            self._flush_big(KINDS[key], batch)

    def _vendors(self) -> _VendorRegistry:
        if self.vendor_registry is None:
            self.vendor_registry = _VendorRegistry(self.conn, self.now, self.report)
        return self.vendor_registry

    def _load_metric_keys(self) -> None:
        metric_ids = {group[1] for group in self.big_groups["observations"] if group[1] is not None}
        self.metric_keys.update(self._stored_metric_keys(metric_ids))

    def _flush_big(self, kind: _Kind, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if kind.key == "cost_entries":
            for row in rows:
                row["vendor_id"] = self._vendors().resolve(
                    row["account_id"], row["vendor_id"], row["vendor_name"]
                )
        elif kind.key == "observations":
            for row in rows:
                if row["metric_id"] is None:
                    continue
                key = self.metric_keys.get(row["metric_id"])
                if row["metric_key"] is None:
                    row["metric_key"] = key
                elif key is not None and row["metric_key"] != key:
                    # The reading would be missed by ?metric_key= of its own metric.
                    self.problems.add(
                        f"observations[id={row['id']}].metric_key: {row['metric_key']!r} is not "
                        f"the key of metric {row['metric_id']} ({key!r})"
                    )
        self._upsert_by_id(kind, rows)

    def _repoint_merged_vendors(self) -> None:
        """SPEC 2.3: entries of a merged vendor move to the one it was merged into."""
        merged = [rec for rec in self.small["vendors"] if rec.row["merged_into_id"] is not None]
        if not merged:
            return
        registry = self._vendors()
        table = tables.cost_entries
        for rec in merged:
            vendor_id = rec.row["id"]
            final = registry.final(rec.row["account_id"], vendor_id)
            if final == vendor_id:
                continue
            result = self.conn.execute(
                update(table)
                .where(table.c.vendor_id == vendor_id)
                .values(vendor_id=final, updated_at=self.now)
            )
            self.report.updated["cost_entries"] += max(result.rowcount, 0)

    def _stored_metric_keys(self, ids: Iterable[int]) -> dict[int, str]:
        """The stored key of each of these metrics that the store holds."""
        table = tables.metrics
        keys: dict[int, str] = {}
        for batch in _chunks(sorted(ids)):
            query = select(table.c.id, table.c.metric_key).where(table.c.id.in_(batch))
            keys.update({row.id: row.metric_key for row in self.conn.execute(query)})
        return keys

    def _rekey_readings(self, stored_keys: dict[int, str]) -> None:
        """SPEC 4.A.9: a metric's readings carry its canonical key, so `?metric_key=` finds
        them; a metric given a new key takes its stored readings with it."""
        table = tables.observations
        for rec in self.small["metrics"]:
            row = rec.row
            old = stored_keys.get(row["id"])
            if old is None or old == row["metric_key"]:
                continue
            result = self.conn.execute(
                update(table)
                .where(
                    table.c.account_id == row["account_id"],
                    table.c.metric_key == old,
                    table.c.metric_id == row["id"],
                )
                .values(metric_key=row["metric_key"], updated_at=self.now)
            )
            self.report.updated["observations"] += max(result.rowcount, 0)


class _VendorRegistry:
    """An account's vendors by id and by case-folded name, merged ones followed (BUNDLE.md)."""

    def __init__(self, conn: Connection, now: datetime, report: LoadReport) -> None:
        self.conn = conn
        self.now = now
        self.report = report
        self.loaded: set[int] = set()
        self.merged_into: dict[int, int | None] = {}
        self.by_name: dict[tuple[int, str], int] = {}
        self.next_id: int | None = None

    def _load(self, account_id: int) -> None:
        if account_id in self.loaded:
            return
        self.loaded.add(account_id)
        table = tables.vendors
        query = (
            select(table.c.id, table.c.name, table.c.merged_into_id)
            .where(table.c.account_id == account_id)
            .order_by(table.c.id)
        )
        named: dict[str, list[tuple[int, bool]]] = {}
        for vendor_id, name, merged_into in self.conn.execute(query):
            self.merged_into[vendor_id] = merged_into
            named.setdefault(name.strip().casefold(), []).append((vendor_id, merged_into is None))
        for folded, candidates in named.items():
            # Prefer a vendor that was not merged away (lowest id), else follow the first.
            unmerged = [vendor_id for vendor_id, live in candidates if live]
            chosen = unmerged[0] if unmerged else candidates[0][0]
            self.by_name[(account_id, folded)] = chosen

    def final(self, account_id: int, vendor_id: int) -> int:
        self._load(account_id)
        seen = set()
        current = vendor_id
        while current not in seen:
            seen.add(current)
            target = self.merged_into.get(current)
            if target is None:
                return current
            current = target
        return current  # pragma: no cover - cycles are refused in pass 1

    def resolve(
        self, account_id: int, vendor_id: int | None, vendor_name: str | None
    ) -> int | None:
        if vendor_id is not None:
            return self.final(account_id, vendor_id)
        if vendor_name is None or not vendor_name.strip():
            return None
        self._load(account_id)
        folded = vendor_name.strip().casefold()
        found = self.by_name.get((account_id, folded))
        if found is not None:
            return self.final(account_id, found)
        if self.next_id is None:
            largest = self.conn.execute(select(func.max(tables.vendors.c.id))).scalar()
            self.next_id = (largest or 0) + 1
        new_id = self.next_id
        self.next_id += 1
        self.conn.execute(
            insert(tables.vendors).values(
                id=new_id,
                account_id=account_id,
                name=vendor_name.strip(),
                merged_into_id=None,
                created_at=self.now,
                updated_at=self.now,
            )
        )
        self.report.inserted["vendors"] += 1
        self.merged_into[new_id] = None
        self.by_name[(account_id, folded)] = new_id
        return new_id


# --------------------------------------------------------------------------- entry point


@contextlib.contextmanager
def _tuned_for_loading(conn: Connection) -> Iterator[None]:
    """Store settings for one big transaction, undone when it ends.

    PostgreSQL: psycopg prepares repeated statements, and the server would keep
    the generic plan made while a table was empty (a sequential scan) for the
    id lookups of every later batch, though a million rows arrived meanwhile.
    SQLite: entries carry several indexes; with the default 2 MiB page cache a
    million-row load spends most of its time re-reading index pages.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    if conn.dialect.name != "sqlite":
        yield
        return
    previous = conn.exec_driver_sql("PRAGMA cache_size").scalar()
    conn.exec_driver_sql(f"PRAGMA cache_size = -{_SQLITE_CACHE_KIB}")
    try:
        yield
    finally:
        conn.exec_driver_sql(f"PRAGMA cache_size = {int(previous or -2000)}")


def load_bundle(
    engine: Engine,
    source: Mapping[str, Any] | str | os.PathLike[str],
    *,
    progress: ProgressHook | None = None,
    now: datetime | None = None,
    before: Callable[[Connection], None] | None = None,
) -> LoadReport:
    """Validate a bundle and upsert it in one transaction (BUNDLE.md).

    `source` is a parsed bundle or the path of a `.json` / `.json.gz` file.
    `now` (naive UTC) stamps rows created or changed without a bundle-given
    timestamp. `before`, when given, runs first in the same transaction (the demo
    clears its account there). Raises BundleError naming every problem found; then
    nothing is written, `before`'s work included.
    """
    if now is None:
        stamp = utc_now()
    else:
        if now.tzinfo is not None:
            now = now.astimezone(UTC).replace(tzinfo=None)
        stamp = truncate_ms(now)
    try:
        reader = _Source(source, progress)
    except _BadSource as exc:
        raise BundleError([str(exc)]) from None
    try:
        with engine.begin() as conn, _tuned_for_loading(conn):
            if before is not None:
                before(conn)
            load = _Load(conn, reader, stamp)
            load.validate()
            if load.problems:
                raise load.problems.error()
            load.write()
    except (IntegrityError, DataError) as exc:
        # A guard: validation should leave the store nothing to refuse. The driver's message
        # can quote a value, so only its kind is shown (SEMANTICS R15).
        detail = type(exc.orig or exc).__name__
        raise BundleError([f"bundle: the store refused the data ({detail})"]) from exc
    _refresh_statistics(engine, load.report)
    return load.report


def _refresh_statistics(engine: Engine, report: LoadReport) -> None:
    """Give the planner statistics for the tables a load changed.

    Without them, PostgreSQL plans the first queries after a bulk load for empty tables (a
    bitmap scan and sort of a whole account instead of walking the keyset index), and SQLite
    walks a whole account's rows for a page of one initiative's. PostgreSQL's tables are
    vacuumed too: until the visibility map is set, a sum cannot be read from its covering
    index alone (a page of budgets took 104 ms where it takes 9 after).

    SQLite's tokens table is left without statistics: it also changes outside loads (issue,
    revoke), and stale figures could have a token looked for by scanning the table rather
    than by its unique hash.
    """
    changed = {
        key
        for counts in (report.inserted, report.updated, report.deleted)
        for key, count in counts.items()
        if count
    }
    names = sorted(KINDS[key].table.name for key in changed if key in KINDS)
    if engine.dialect.name == "sqlite":
        statements = [f"ANALYZE {name}" for name in names if name != _T.tokens.name]
    else:
        statements = ["VACUUM (ANALYZE) " + ", ".join(names)] if names else []
    if statements:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for statement in statements:
                conn.execute(text(statement))
