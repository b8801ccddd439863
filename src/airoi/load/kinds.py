"""The kinds of record a bundle holds (BUNDLE.md): for each, its table, fields, conversions,
defaults, references and how its account is found.

A kind is declared once, from its table: every column is a field of the same name with
the conversion its type implies, unless the declaration says otherwise. What a row
serves (and so what moves its `updated_at`, SEMANTICS R32) and what is stored but never
served (SEMANTICS R15) is told apart here too.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, get_args

from sqlalchemy import BigInteger, Boolean, Date, DateTime, Float, Integer, String, Table

from airoi.db import tables
from airoi.load.values import (
    COUNT,
    INT32,
    INT64,
    MONTH,
    Conv,
    conv_bool,
    conv_currency,
    conv_date,
    conv_datetime,
    conv_id,
    conv_json_object,
    conv_number,
    conv_rate,
    conv_secret,
    conv_str_list,
    enum_conv,
    person_name,
    str_conv,
)
from airoi.tokens import hash_token, secret_length, shown_prefix
from airoi.vocabulary import (
    AuthType,
    BudgetSource,
    BudgetVersionStatus,
    CostCategory,
    IntegrationStatus,
    OpexCadence,
    Outcome,
    ServedList,
    Stage,
    ValueStatus,
)

# SPEC sections 2 and 3 (airoi/vocabulary.py), and the values only the bundle has.
STAGES: Final = get_args(Stage)
VALUE_STATUSES: Final = get_args(ValueStatus)
COST_CATEGORIES: Final = get_args(CostCategory)
OUTCOMES: Final = get_args(Outcome)
INTEGRATION_STATUSES: Final = get_args(IntegrationStatus)
AUTH_TYPES: Final = get_args(AuthType)
OPEX_CADENCES: Final = get_args(OpexCadence)
BUDGET_SOURCES: Final = get_args(BudgetSource)
BUDGET_STATUSES: Final = get_args(BudgetVersionStatus)
ROLES: Final = ("owner", "admin", "member", "viewer")
ASSESSMENT_STATUSES: Final = ("active", "closed")
OBSERVATION_ROLES: Final = ("baseline", "reading")

# SPEC 2.3: the category follows the type unless a person set it.
CAPEX_COST_TYPES: Final = frozenset(
    {"implementation", "hardware", "setup", "integration", "training", "consulting", "migration"}
)

# Kinds the top-level "delete" object may name. FX rates have no id: skipped.
DELETABLE: Final = (
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
UNLINKED_ON_DELETE: Final = {
    "initiatives": (("decisions", "initiative_id"),),
    "metrics": (("observations", "metric_id"),),
    "integrations": (
        ("cost_entries", "source_connection_id"),
        ("value_entries", "source_connection_id"),
        ("observations", "source_connection_id"),
    ),
}
# The kinds a list serves (SEMANTICS R34): removing one of their rows leaves a tombstone.
SERVED_LISTS: Final = get_args(ServedList)
INITIATIVE_CHILDREN: Final = (
    "initiative_notes",
    "budget_versions",
    "cost_entries",
    "value_entries",
    "observations",
)


# --------------------------------------------------------------------------- kinds


@dataclass(frozen=True, eq=False)
class Field:
    name: str  # as spelt in the bundle
    column: str
    conv: Conv
    required: bool


# What a kind derives once a record is merged with its stored row (SEMANTICS R33): the
# row, the names of the columns the record gave, and the stored row (None for a new one).
Derive = Callable[[dict[str, Any], Container[str], Mapping[Any, Any] | None], None]


@dataclass(frozen=True, eq=False)
class Kind:
    key: str
    table: Table
    # self: the account itself; field: `account_id` required; initiative: the
    # initiative's account; observation: initiative's, else metric's, else given;
    # user: the token's user's.
    account: str
    fields: dict[str, Field]
    convs: dict[str, tuple[str, Conv]]  # field name -> (column, conversion), the hot path
    blank: dict[str, Any]  # every written column with its default (a new row's absent fields)
    required: tuple[Field, ...]
    aliases: dict[str, str]  # person reference field -> its `*_id` column
    ignored: frozenset[str]
    refs: dict[str, str]  # column -> kind it must resolve to, in the same account
    has_source: bool
    big: bool
    stamps: tuple[str, ...]
    # Stored columns whose change is a change of what the row serves (its own fields and
    # the entry date and converted amount derived from them): a new stamp (SEMANTICS R32).
    served: tuple[str, ...]
    # Stored and never served (SEMANTICS R15), or kept for the loader alone: written when
    # they change, with no new stamp.
    unserved: tuple[str, ...]
    reporting: tuple[str, ...]  # derived on write for the sums (R2, R5); never loaded
    prepare: Callable[[dict[str, Any]], None] | None  # on the record alone, when read
    derive: Derive | None  # on the merged row, when written


# Columns the store derives on write for the ROI and budget sums (entry date per
# SEMANTICS R2, its month, the amount in the account currency per R5), when the
# schema has them.
REPORTING: Final = ("entry_date", "entry_month", "account_amount_cents")
# What an entry row of the API adds to the entry (SEMANTICS R35): derived, so a row copied from
# the API loads as it is, and these are computed again (BUNDLE.md: never loaded).
SERVED_AMOUNTS: Final = ("account_amount_cents", "reported_on")

SINGULAR: Final = {
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
        return conv_currency if name == "currency" else str_conv(column_type.length)
    if isinstance(column_type, Boolean):
        return conv_bool
    if isinstance(column_type, Integer):
        if name == "id" or name.endswith("_id"):
            return conv_id
        return INT64 if isinstance(column_type, BigInteger) else INT32
    if isinstance(column_type, Float):
        return conv_number
    if isinstance(column_type, DateTime):
        return conv_datetime
    if isinstance(column_type, Date):
        return conv_date
    raise TypeError(f"no bundle conversion for {table.name}.{name}")  # pragma: no cover


def _kind(
    key: str,
    table: Table,
    *,
    account: str,
    required: Iterable[str] = (),
    defaults: Mapping[Any, Any] | None = None,
    convs: Mapping[str, Conv] | None = None,
    aliases: Mapping[str, str] | None = None,
    ignored: Iterable[str] = (),
    refs: Mapping[str, str] | None = None,
    has_source: bool = False,
    big: bool = False,
    columns: Iterable[str] | None = None,
    stamps: tuple[str, ...] = ("created_at", "updated_at"),
    unserved: tuple[str, ...] = (),
    computed: tuple[str, ...] = (),
    into: Mapping[str, str] | None = None,
    prepare: Callable[[dict[str, Any]], None] | None = None,
    derive: Derive | None = None,
) -> Kind:
    """`computed` columns are the loader's own (never given in a bundle); `unserved` ones
    are stored but not served, so their change alone gives the row no new stamp; `into`
    names the column a field is kept in when it is not the field's own name."""
    into = into or {}
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
            and column.name not in REPORTING
            and column.name not in computed
            and not (column.name == "account_id" and account in ("initiative", "observation"))
        ]
    )
    fields: dict[str, Field] = {}
    blank: dict[str, Any] = {}
    for name in names:
        column = into.get(name, name)
        conv = convs.get(name) or _column_conv(table, column)
        fields[name] = Field(name, column, conv, name in required)
        blank[column] = defaults.get(name)
    for stamp in stamps:
        fields[stamp] = Field(stamp, stamp, conv_datetime, False)
    if account in ("initiative", "observation"):
        blank["account_id"] = None
    for name in computed:
        blank[name] = defaults.get(name)
    reporting = tuple(name for name in REPORTING if name in table.c)
    unserved = (*unserved, *computed)
    served = tuple(
        column.name
        for column in table.columns
        if column.name not in stamps and column.name not in unserved
    )
    return Kind(
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
        served=served,
        unserved=unserved,
        reporting=reporting,
        prepare=prepare,
        derive=derive,
    )


SOURCE_PARTS: Final[dict[str, tuple[str, Conv]]] = {
    "type": ("source_type", str_conv(100)),
    "ref": ("source_ref", str_conv(500)),
    "connection_id": ("source_connection_id", conv_id),
}


def category_of(cost_type: str | None) -> str:
    """SPEC 2.3: the category a cost type implies."""
    is_capex = cost_type is not None and cost_type.strip().lower() in CAPEX_COST_TYPES
    return "capex" if is_capex else "opex"


def derive_cost(
    row: dict[str, Any], given: Container[str], stored: Mapping[Any, Any] | None
) -> None:
    """SEMANTICS R33: the category follows the current cost type until a bundle gives it;
    from then on it stays as given until given again (null: it follows the type again)."""
    if "cost_category" in given:
        row["cost_category_given"] = row["cost_category"] is not None
    elif stored is not None:
        row["cost_category_given"] = stored["cost_category_given"]
    if not row["cost_category_given"]:
        row["cost_category"] = category_of(row["cost_type"])


def derive_value(
    row: dict[str, Any], given: Container[str], stored: Mapping[Any, Any] | None
) -> None:
    """Provenance, when the entry has none (not given, or given as null), from its source."""
    if row["provenance"] is None:
        if row["source_connection_id"] is not None:
            row["provenance"] = "synced from a connection"
        elif row["formula_id"] is not None:
            row["provenance"] = "calculated from a formula"
        else:
            row["provenance"] = "entered by hand"


GIVEN_LENGTH: Final = "given length"  # no column has this name


def prepare_token(row: dict[str, Any]) -> None:
    # SEMANTICS R29: only the hash and the shown prefix are kept, never the secret. The
    # secret arrives in `token_hash` and is hashed in place. Its length is kept until the
    # issuers are checked, which takes it out of the row.
    secret = row.get("token_hash")
    row["token_hash"] = hash_token(secret) if secret is not None else None
    row["prefix"] = shown_prefix(secret) if secret is not None else None
    row[GIVEN_LENGTH] = secret_length(secret) if secret is not None else None


_T = tables
KINDS: Final[dict[str, Kind]] = {
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
            convs={"fiscal_year_start_month": MONTH},
        ),
        _kind(
            "users",
            _T.users,
            account="field",
            required=("id", "account_id", "name", "role"),
            convs={"role": enum_conv(ROLES), "name": person_name(_column_conv(_T.users, "name"))},
        ),
        _kind(
            "tokens",
            _T.tokens,
            account="user",
            required=("user_id", "token"),
            columns=("user_id", "token", "expires_at", "revoked_at"),
            convs={"token": conv_secret},
            into={"token": "token_hash"},
            refs={"user_id": "users"},
            stamps=("created_at",),
            prepare=prepare_token,
        ),
        _kind(
            "fx_rates",
            _T.fx_rates,
            account="field",
            required=("account_id", "currency", "effective_from", "rate"),
            convs={"rate": conv_rate},
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
                "status": enum_conv(INTEGRATION_STATUSES),
                "auth_type": enum_conv(AUTH_TYPES),
                "primary_source_categories": conv_str_list,
                "metric_categories": conv_str_list,
                "credentials": conv_json_object,
                "settings": conv_json_object,
            },
            aliases={"connected_by": "connected_by_id"},
            refs={"connected_by_id": "users"},
            unserved=("credentials", "settings", "last_error"),
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
            convs={"stage": enum_conv(STAGES)},
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
                "opex_cadence": enum_conv(OPEX_CADENCES),
                "source": enum_conv(BUDGET_SOURCES),
                "status": enum_conv(BUDGET_STATUSES),
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
            defaults={"is_estimated": False, "locked": False, "cost_category_given": False},
            convs={"cost_category": enum_conv(COST_CATEGORIES)},
            ignored=SERVED_AMOUNTS,
            refs={"vendor_id": "vendors", "source_connection_id": "integrations"},
            computed=("cost_category_given",),
            derive=derive_cost,
        ),
        _kind(
            "value_entries",
            _T.value_entries,
            account="initiative",
            big=True,
            has_source=True,
            required=("id", "initiative_id", "status"),
            defaults={"is_estimated": False},
            convs={"status": enum_conv(VALUE_STATUSES)},
            ignored=("counts_toward_roi", *SERVED_AMOUNTS),
            refs={"source_connection_id": "integrations"},
            derive=derive_value,
        ),
        _kind(
            "observations",
            _T.observations,
            account="observation",
            big=True,
            has_source=True,
            required=("id",),
            defaults={"is_estimated": False},
            convs={"role": enum_conv(OBSERVATION_ROLES), "sample_size": COUNT},
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
                "outcome": enum_conv(OUTCOMES),
                "stage_before": enum_conv(STAGES),
                "stage_after": enum_conv(STAGES),
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
            convs={"status": enum_conv(ASSESSMENT_STATUSES)},
        ),
    )
}
BUNDLE_KEYS: Final = (*KINDS, "delete")
BIG: Final = tuple(key for key, kind in KINDS.items() if kind.big)
# The kinds keyed by what they give rather than by an id, and the columns of that key.
KEYED: Final = {
    "tokens": ("token_hash",),
    "fx_rates": ("account_id", "currency", "effective_from"),
}
SMALL_WRITE_ORDER: Final = (
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
LATE_WRITE_ORDER: Final = ("decisions", "assessments")
