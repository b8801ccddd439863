"""Every table of the store, in SQLAlchemy Core.

Ids are chosen by the bundle (the id the account's own system knows a record by),
so primary keys are plain integers without autoincrement. Every served table
carries `account_id` (denormalised onto entries) so that one index on
(account_id, updated_at, id) serves the keyset order of SPEC 4.A.1.

Datetimes are stored as naive UTC, truncated to the millisecond on write
(SEMANTICS R3), so what is served is exactly what is stored; on SQLite as the
very text served (`airoi.db.types.Timestamp`).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

from airoi.db.types import Timestamp

# SQLite makes an INTEGER PRIMARY KEY the rowid; BIGINT elsewhere.
Id = BigInteger().with_variant(Integer(), "sqlite")
Cents = BigInteger

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _id() -> Column[int]:
    return Column("id", Id, primary_key=True, autoincrement=False)


def _account() -> Column[int]:
    return Column("account_id", Id, ForeignKey("accounts.id"), nullable=False)


def _stamps() -> list[Column[object]]:
    return [
        Column("created_at", Timestamp(), nullable=False),
        Column("updated_at", Timestamp(), nullable=False),
    ]


def _source() -> list[Column[object]]:
    return [
        Column("source_type", String(100)),
        Column("source_ref", String(500)),
        Column("source_connection_id", Id),
    ]


def _reporting() -> list[Column[object]]:
    """Derived on write, never loaded or served: what the ROI and budget sums read.

    `entry_date` is SEMANTICS R2 (period_start, else the UTC date of created_at),
    `entry_month` its first day, and `account_amount_cents` the amount converted into
    the account currency at the entry date (R5, half-even once per entry).
    """
    return [
        Column("entry_date", Date, nullable=False),
        Column("entry_month", Date, nullable=False),
        Column("account_amount_cents", Cents),
    ]


def _keyset_index(table: str) -> Index:
    return Index(f"ix_{table}_keyset", "account_id", "updated_at", "id")


accounts = Table(
    "accounts",
    metadata,
    _id(),
    Column("name", String(300), nullable=False),
    Column("currency", String(3), nullable=False, server_default="USD"),
    Column("api_access", Boolean, nullable=False, server_default="1"),
    Column("fiscal_year_start_month", Integer, nullable=False, server_default="1"),
    Column("approval_threshold_cents", Cents),
    Column("internal", Boolean, nullable=False, server_default="0"),
    *_stamps(),
)

users = Table(
    "users",
    metadata,
    _id(),
    _account(),
    Column("name", String(300), nullable=False),
    Column("email", String(320)),
    Column("role", String(20), nullable=False),
    Column("removed_at", Timestamp()),
    *_stamps(),
    Index("ix_users_account_id", "account_id"),
)

tokens = Table(
    "tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("prefix", String(40), nullable=False),
    Column("user_id", Id, ForeignKey("users.id"), nullable=False),
    Column("expires_at", Timestamp()),
    Column("revoked_at", Timestamp()),
    Column("created_at", Timestamp(), nullable=False),
    Index("ix_tokens_prefix", "prefix"),
    Index("ix_tokens_user_id", "user_id"),
)

fx_rates = Table(
    "fx_rates",
    metadata,
    Column("account_id", Id, ForeignKey("accounts.id"), primary_key=True),
    Column("currency", String(3), primary_key=True),
    Column("effective_from", Date, primary_key=True),
    # A decimal string (units of account currency per unit), kept exact.
    Column("rate", String(40), nullable=False),
)

vendors = Table(
    "vendors",
    metadata,
    _id(),
    _account(),
    Column("name", String(300), nullable=False),
    Column("merged_into_id", Id),
    *_stamps(),
    Index("ix_vendors_account_id", "account_id"),
)

initiatives = Table(
    "initiatives",
    metadata,
    _id(),
    _account(),
    Column("title", String(500), nullable=False),
    Column("description", Text),
    Column("hypothesis", Text),
    Column("stage", String(20), nullable=False),
    Column("is_sample", Boolean, nullable=False, server_default="0"),
    Column("category", String(200)),
    Column("priority", Integer),
    Column("source", String(200)),
    Column("business_unit", String(200)),
    Column("department", String(200)),
    Column("gl_dimension_value", String(200)),
    Column("owner_id", Id, ForeignKey("users.id")),
    Column("confidence_score", Float),
    Column("roi_time_horizon_years", Integer),
    Column("currency", String(3)),
    Column("expected_capex_cents", Cents),
    Column("expected_opex_cents", Cents),
    Column("expected_cost_savings_cents", Cents),
    Column("expected_revenue_uplift_cents", Cents),
    Column("started_at", Timestamp()),
    Column("went_live_at", Timestamp()),
    Column("approved_at", Timestamp()),
    Column("closed_at", Timestamp()),
    Column("submitted_for_review_at", Timestamp()),
    *_stamps(),
    _keyset_index("initiatives"),
)

initiative_notes = Table(
    "initiative_notes",
    metadata,
    _id(),
    _account(),
    Column("initiative_id", Id, ForeignKey("initiatives.id"), nullable=False),
    Column("author_id", Id, ForeignKey("users.id")),
    Column("body", Text, nullable=False),
    *_stamps(),
    Index("ix_initiative_notes_initiative", "initiative_id", "created_at"),
)

cost_entries = Table(
    "cost_entries",
    metadata,
    _id(),
    _account(),
    Column("initiative_id", Id, ForeignKey("initiatives.id"), nullable=False),
    Column("amount_cents", Cents),
    Column("currency", String(3)),
    Column("cost_type", String(100)),
    Column("cost_category", String(10), nullable=False),
    Column("period_start", Date),
    Column("period_end", Date),
    Column("vendor_id", Id, ForeignKey("vendors.id")),
    Column("vendor_name", String(300)),
    Column("description", Text),
    Column("notes", Text),
    Column("is_estimated", Boolean, nullable=False, server_default="0"),
    Column("locked", Boolean, nullable=False, server_default="0"),
    *_source(),
    *_stamps(),
    *_reporting(),
    # SEMANTICS R33: the category was given, so it no longer follows cost_type. Never served.
    Column("cost_category_given", Boolean, nullable=False, server_default="0"),
    _keyset_index("cost_entries"),
    # SEMANTICS R42: a record without id is matched by its source connection and ref.
    Index("ix_cost_entries_source", "source_connection_id", "source_ref"),
    Index("ix_cost_entries_initiative", "initiative_id", "updated_at", "id"),
    Index("ix_cost_entries_vendor", "vendor_id"),
    # Covering indexes for the ROI sums (by account and date) and budget sums (by initiative).
    # The first also serves the period filter on the entry date (SEMANTICS R11).
    Index(
        "ix_cost_entries_roi",
        "account_id",
        "entry_date",
        "cost_category",
        "initiative_id",
        # What a breakdown by vendor or cost type groups by (SEMANTICS R37), covered too.
        "vendor_id",
        "cost_type",
        "account_amount_cents",
    ),
    # In the order the budget sums group by (initiative, month, category), so the sums are
    # read off the index in order; the date (spend up to today) is tested from the index.
    Index(
        "ix_cost_entries_budget",
        "initiative_id",
        "entry_month",
        "cost_category",
        "entry_date",
        "account_amount_cents",
    ),
)

value_entries = Table(
    "value_entries",
    metadata,
    _id(),
    _account(),
    Column("initiative_id", Id, ForeignKey("initiatives.id"), nullable=False),
    Column("amount_cents", Cents),
    Column("currency", String(3)),
    Column("status", String(20), nullable=False),
    Column("entry_type", String(100)),
    Column("period_start", Date),
    Column("period_end", Date),
    Column("is_estimated", Boolean, nullable=False, server_default="0"),
    Column("confidence_score", Float),
    Column("quality_score", Float),
    Column("notes", Text),
    Column("provenance", String(200)),
    Column("calculation_version", Integer),
    Column("formula_id", Id),
    *_source(),
    Column("approved_at", Timestamp()),
    *_stamps(),
    *_reporting(),
    _keyset_index("value_entries"),
    # SEMANTICS R42: a record without id is matched by its source connection and ref.
    Index("ix_value_entries_source", "source_connection_id", "source_ref"),
    Index("ix_value_entries_initiative", "initiative_id", "updated_at", "id"),
    Index("ix_value_entries_period", "account_id", "entry_date"),  # SEMANTICS R11
    Index("ix_value_entries_status", "account_id", "status", "updated_at", "id"),
    Index(
        "ix_value_entries_roi",
        "account_id",
        "status",
        "entry_date",
        "initiative_id",
        "account_amount_cents",
    ),
)

metrics = Table(
    "metrics",
    metadata,
    _id(),
    _account(),
    Column("metric_key", String(200), nullable=False),
    Column("name", String(300), nullable=False),
    Column("description", Text),
    Column("metric_type", String(50)),
    Column("unit", String(50)),
    Column("currency_metric", Boolean, nullable=False, server_default="0"),
    Column("active", Boolean, nullable=False, server_default="1"),
    *_stamps(),
    _keyset_index("metrics"),
)

observations = Table(
    "observations",
    metadata,
    _id(),
    _account(),
    Column("metric_id", Id),
    Column("metric_key", String(200)),
    Column("initiative_id", Id, ForeignKey("initiatives.id")),
    Column("value", Float),
    Column("role", String(20)),
    Column("baseline_method", String(200)),
    Column("observed_at", Timestamp()),
    Column("period_start", Date),
    Column("period_end", Date),
    Column("is_estimated", Boolean, nullable=False, server_default="0"),
    Column("sample_size", Integer),
    Column("quality_score", Float),
    *_source(),
    *_stamps(),
    _keyset_index("observations"),
    # SEMANTICS R42: a record without id is matched by its source connection and ref.
    Index("ix_observations_source", "source_connection_id", "source_ref"),
    Index("ix_observations_initiative", "initiative_id", "updated_at", "id"),
    Index("ix_observations_metric_key", "account_id", "metric_key", "updated_at", "id"),
)

budget_versions = Table(
    "budget_versions",
    metadata,
    _id(),
    _account(),
    Column("initiative_id", Id, ForeignKey("initiatives.id"), nullable=False),
    Column("effective_from", Date, nullable=False),
    Column("ends_on", Date),
    Column("capex_cents", Cents, nullable=False, server_default="0"),
    Column("opex_cents", Cents, nullable=False, server_default="0"),
    Column("opex_cadence", String(20), nullable=False, server_default="monthly"),
    Column("source", String(20), nullable=False, server_default="manual"),
    Column("reason", Text),
    Column("set_by_id", Id, ForeignKey("users.id")),
    Column("status", String(20), nullable=False),
    Column("approved_at", Timestamp()),
    *_stamps(),
    Index("ix_budget_versions_initiative", "initiative_id"),
)

decisions = Table(
    "decisions",
    metadata,
    _id(),
    _account(),
    # No foreign key: a decision outlives its initiative (initiative_id becomes null).
    Column("initiative_id", Id),
    Column("subject_title", String(500), nullable=False),
    Column("outcome", String(20), nullable=False),
    Column("rationale", Text, nullable=False),
    Column("stage_before", String(20), nullable=False),
    Column("stage_after", String(20), nullable=False),
    Column("decided_at", Timestamp()),
    Column("decided_by_id", Id, ForeignKey("users.id")),
    Column("next_review_on", Date),
    Column("currency", String(3)),
    Column("approved_value_cents", Cents),
    Column("cost_to_date_cents", Cents),
    Column("net_cents", Cents),
    Column("planned_value_cents", Cents),
    Column("planned_value_to_date_cents", Cents),
    Column("roi", Float),
    *_stamps(),
    _keyset_index("decisions"),
    Index("ix_decisions_initiative", "initiative_id", "updated_at", "id"),
    Index("ix_decisions_outcome", "account_id", "outcome", "updated_at", "id"),
)

integrations = Table(
    "integrations",
    metadata,
    _id(),
    _account(),
    Column("platform", String(100), nullable=False),
    Column("name", String(300)),
    Column("description", Text),
    Column("status", String(20), nullable=False),
    Column("auth_type", String(30)),
    Column("last_sync_status", String(100)),
    Column("last_synced_at", Timestamp()),
    Column("reauth_required_at", Timestamp()),
    Column("external_account_id", String(300)),
    Column("external_account_name", String(300)),
    Column("primary_source_categories", JSON, nullable=False),
    Column("metric_categories", JSON, nullable=False),
    Column("simulated", Boolean, nullable=False, server_default="0"),
    Column("connected_by_id", Id, ForeignKey("users.id")),
    # Stored, never served (SEMANTICS R15).
    Column("credentials", JSON),
    Column("settings", JSON),
    Column("last_error", Text),
    *_stamps(),
    _keyset_index("integrations"),
    Index("ix_integrations_platform", "account_id", "platform", "updated_at", "id"),
    Index("ix_integrations_status", "account_id", "status", "updated_at", "id"),
)

assessments = Table(
    "assessments",
    metadata,
    _id(),
    _account(),
    Column("title", String(500), nullable=False),
    Column("status", String(20), nullable=False),
    *_stamps(),
    Index("ix_assessments_account_id", "account_id"),
)

# SEMANTICS R34: one row for every served row a load removed (given in `delete`, or removed
# with its initiative), kept as long as the store. `resource` is the list that served it;
# `seq` orders the tombstones of one load (they share its stamp) and keys the cursor.
deletions = Table(
    "deletions",
    metadata,
    Column("seq", Id, primary_key=True, autoincrement=True),
    # No foreign key: tombstones outlive what they name, also an account the demo's refresh
    # removes and makes again.
    Column("account_id", Id, nullable=False),
    Column("resource", String(30), nullable=False),
    Column("record_id", Id, nullable=False),
    Column("deleted_at", Timestamp(), nullable=False),
    Index("ix_deletions_keyset", "account_id", "deleted_at", "seq"),
)

# SEMANTICS R32: the last stamp a load gave (one row, id 1), so that the next load's is later
# than every updated_at stored without reading the tables for it.
store_clock = Table(
    "store_clock",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("last_stamp", Timestamp(), nullable=False),
)

# SEMANTICS R13: the store's own secret (one row, id 1), made at random by the migration
# that adds it (or by `airoi init` when the row is gone), that cursors are signed with. Kept
# in the store so that every server of it (a hot standby too) serves the same cursors.
store_secret = Table(
    "store_secret",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("secret", LargeBinary(64), nullable=False),
)

# OAuth 2.1 for the tool endpoint (airoi.oauth): the only tables the service itself writes,
# through a writer engine held to them. No foreign key to `tokens` or `users`: a load replaces
# those, and an OAuth grant is checked against its personal token (by hash) at every use.
oauth_clients = Table(
    "oauth_clients",
    metadata,
    Column("client_id", String(64), primary_key=True),
    # SHA-256 of the client secret, for a client registered with one.
    Column("secret_hash", String(64)),
    # The registered metadata (RFC 7591) as JSON, without the secret.
    Column("registration", Text, nullable=False),
    Column("created_at", Timestamp(), nullable=False),
    # When the client was first granted a code: one never granted is removed after a day.
    Column("granted_at", Timestamp()),
    Index("ix_oauth_clients_created_at", "created_at"),
)

oauth_codes = Table(
    "oauth_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    Column("client_id", String(64), ForeignKey("oauth_clients.client_id"), nullable=False),
    # SHA-256 of the personal access token pasted on the sign-in page (tokens.token_hash).
    Column("pat_hash", String(64), nullable=False),
    Column("redirect_uri", Text, nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("resource", Text, nullable=False),
    Column("scopes", String(200), nullable=False),
    Column("expires_at", Timestamp(), nullable=False),
    Index("ix_oauth_codes_expires_at", "expires_at"),
)

oauth_tokens = Table(
    "oauth_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("kind", String(8), nullable=False),  # access, refresh; code, sign-in: used
    # One authorization: the tokens issued from one code and its refreshes.
    Column("grant_id", String(64), nullable=False),
    Column("client_id", String(64), ForeignKey("oauth_clients.client_id"), nullable=False),
    Column("pat_hash", String(64), nullable=False),
    Column("resource", Text, nullable=False),
    Column("scopes", String(200), nullable=False),
    Column("expires_at", Timestamp(), nullable=False),
    # A refresh token once exchanged; presented again, its whole grant is ended.
    Column("used_at", Timestamp()),
    Index("ix_oauth_tokens_grant_id", "grant_id"),
    Index("ix_oauth_tokens_pat_hash", "pat_hash"),
    Index("ix_oauth_tokens_expires_at", "expires_at"),
)

# Derived, never loaded or served: one row per searchable record of the search tool (issue
# 23), its texts folded (accents removed, case folded) by airoi.db.search_index, rebuilt by
# every load that changes a searched kind. Indexed by the store's own text search: an FTS5
# trigram table kept in step by triggers on SQLite, trigram GIN indexes on PostgreSQL (both
# made by migration 0007 and not declared here). No foreign key, like deletions: the demo's
# refresh removes its account and makes it again.
search_entries = Table(
    "search_entries",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("account_id", Id, nullable=False),
    Column("kind", String(20), nullable=False),
    Column("ref_id", Id, nullable=False),
    Column("title", Text, nullable=False),
    Column("body", Text, nullable=False),
    Index("ix_search_entries_account", "account_id", "kind", "ref_id"),
)
