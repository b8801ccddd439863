"""`airoi import focus` (IMPORT.md; SEMANTICS R40): FOCUS exports as real ones are, messy, in
CSV, gzipped CSV and Parquet, read into cost entries that the API serves to the cent.

Every expected figure below is worked out by hand from the rows written here."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.imports.helpers import account_with, airoi_import, write_csv

HEADER = (
    "BillingAccountId",
    "BillingCurrency",
    "BilledCost",
    "EffectiveCost",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeFrequency",
    "ProviderName",
    "ServiceName",
    "ServiceCategory",
    "Tags",
)
BOT = '{"application": "support-bot"}'
# Real exports: a space between date and time, Z, an offset; enum values in three cases;
# NULL and empty cells; a Tags key with a stray space (another key); sub-cent amounts with
# many decimals; a negative credit; a one-time charge in EUR.
MESSY = [
    ("A1", "USD", "1.005", "1.004", "2026-03-01 00:00:00", "2026-03-01 01:00:00",
     "Usage-Based", "Microsoft", "Azure OpenAI", "AI and Machine Learning", BOT),
    ("A1", "USD", "0.0049999", "0.0049999", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z",
     "usage-based", "Microsoft", "Azure OpenAI", "AI and Machine Learning",
     '{"application": "support-bot", "env": "prod"}'),
    ("A1", "USD", "-0.25", "-0.25", "2026-03-01T02:00:00+00:00", "2026-03-01T03:00:00+00:00",
     "USAGE-BASED", "Microsoft", "Azure OpenAI", "AI and Machine Learning", BOT),
    ("A1", "USD", "NULL", "NULL", "2026-03-01T03:00:00Z", "2026-03-01T04:00:00Z",
     "Usage-Based", "Microsoft", "Azure OpenAI", "AI and Machine Learning", BOT),
    ("A1", "USD", "3.333333333", "3.333333333", "2026-03-02 00:00:00", "2026-03-03 00:00:00",
     "Usage-Based", "Microsoft", "Azure OpenAI", "AI and Machine Learning",
     '{" application": "support-bot"}'),
    ("A1", "EUR", "100", "100", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z",
     "One-Time", "Microsoft", "Azure OpenAI Setup", "AI and Machine Learning", ""),
    ("A1", "USD", "5", "5", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z",
     "Usage-Based", "AWS", "Amazon EC2", "Compute", "{}"),
    ("A1", "USD", "2.50", "2.50", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z",
     "Recurring", "AWS", "Amazon EC2", "Compute", "NULL"),
]  # fmt: skip
RULES = """\
amount = "EffectiveCost"

[[map]]
initiative_id = 101
where = { "Tags.application" = "support-bot" }
vendor_name = "Azure OpenAI"

[[map]]
initiative_id = 102
where = { ServiceCategory = "AI and Machine Learning" }
"""
# By hand: initiative 101 on 1 March, EffectiveCost 1.004 + 0.0049999 - 0.25 (+ null)
# = 0.7589999 USD = 75.89999 cents -> 76. Initiative 102 on 2 March: 3.333333333 USD =
# 333.3333333 cents -> 333 (opex), and 100 EUR one-time = 10,000 EUR cents (capex), 11,000 USD
# cents at 1.1. AWS's two rows are taken by no rule: 7.50 USD unmatched.
EXPECTED = {
    (101, "2026-03-01", "USD", "opex", "Azure OpenAI", "Azure OpenAI"): (76, 76),
    (102, "2026-03-02", "USD", "opex", "Microsoft", "Azure OpenAI"): (333, 333),
    (102, "2026-03-02", "EUR", "capex", "Microsoft", "Azure OpenAI Setup"): (10_000, 11_000),
}


def _files(tmp_path: Path) -> tuple[Path, Path]:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    return write_csv(tmp_path / "bill.csv", HEADER, MESSY), rules


def _served(client: TestClient[Litestar], token: str) -> dict[tuple[Any, ...], tuple[int, int]]:
    rows = client.get("/api/v1/cost_entries?limit=500", headers=bearer(token)).json()["data"]
    return {
        (
            row["initiative_id"],
            row["period_start"],
            row["currency"],
            row["cost_category"],
            row["vendor_name"],
            row["description"],
        ): (row["amount_cents"], row["account_amount_cents"])
        for row in rows
    }


def test_a_messy_export_becomes_entries_summed_exactly(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R40
    token = account_with(engine, fx={"EUR": "1.1"})
    bill, rules = _files(tmp_path)
    result = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules)
    assert result.exit_code == 0, result.output
    assert _served(client, token) == EXPECTED
    rows = client.get("/api/v1/cost_entries", headers=bearer(token)).json()["data"]
    for row in rows:
        assert row["period_end"] == row["period_start"]  # one second before the exclusive end
        assert row["cost_type"] == "infrastructure"  # the FOCUS default
        assert row["is_estimated"] is False
        assert row["source"]["type"] == "import"
        assert row["source"]["ref"].startswith("focus/")
    roi = client.get("/api/v1/roi?window=all", headers=bearer(token)).json()
    assert roi["cost"] == {"capex_cents": 11_000, "opex_cents": 76 + 333}
    assert roi["total_cost_cents"] == 11_409
    # The report: 8 rows read, 6 matched, and the unmatched money named by provider and service.
    assert "Rows read: 8; matched: 6; unmatched: 2" in result.output
    assert "inserted 3, updated 0, unchanged 0, deleted 0" in result.output
    assert "AWS / Amazon EC2: 2 rows, 7.50 USD" in result.output


def test_gzipped_csv_and_parquet_make_the_same_entries(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R40: the same rows make the same groups, so the same refs, whatever the file.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    token = account_with(engine, fx={"EUR": "1.1"})
    bill, rules = _files(tmp_path)
    packed = tmp_path / "bill.csv.gz"
    packed.write_bytes(gzip.compress(bill.read_bytes()))
    columns = {
        name: [None if row[i] in ("", "NULL") else row[i] for row in MESSY]
        for i, name in enumerate(HEADER)
    }
    table = pa.table(columns)
    parquet = tmp_path / "bill.parquet"
    pq.write_table(table, parquet)

    first = airoi_import(db_url, "focus", packed, "--account", "1", "--rules", rules)
    assert first.exit_code == 0, first.output
    assert _served(client, token) == EXPECTED
    again = airoi_import(db_url, "focus", parquet, "--account", "1", "--rules", rules)
    assert again.exit_code == 0, again.output
    assert "inserted 0, updated 0, unchanged 3, deleted 0" in again.output
    assert _served(client, token) == EXPECTED


def test_typed_parquet_columns_are_read_exactly(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # IMPORT.md: amounts read exactly as written: a decimal column as it is, timestamps in UTC.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from datetime import UTC, datetime
    from decimal import Decimal

    token = account_with(engine)
    starts = [datetime(2026, 4, 1, hour, tzinfo=UTC) for hour in (0, 1, 2)]
    table = pa.table(
        {
            "BillingCurrency": ["USD"] * 3,
            "EffectiveCost": pa.array(
                [Decimal("0.123456789012"), Decimal("0.000000000001"), Decimal("-0.0034")],
                type=pa.decimal128(20, 12),
            ),
            "ChargePeriodStart": pa.array(starts, type=pa.timestamp("us", tz="UTC")),
            "ChargePeriodEnd": pa.array(
                [datetime(2026, 4, 1, hour + 1, tzinfo=UTC) for hour in (0, 1, 2)],
                type=pa.timestamp("us", tz="UTC"),
            ),
            "ProviderName": ["Google Cloud"] * 3,
            "ServiceName": ["Vertex AI"] * 3,
        }
    )
    parquet = tmp_path / "typed.parquet"
    pq.write_table(table, parquet)
    rules = tmp_path / "rules.toml"
    rules.write_text("[[map]]\ninitiative_id = 103\n", encoding="utf-8")
    result = airoi_import(db_url, "focus", parquet, "--account", "1", "--rules", rules)
    assert result.exit_code == 0, result.output
    # 0.123456789012 + 0.000000000001 - 0.0034 = 0.120056789013 USD = 12.0056789013 -> 12 cents
    (row,) = client.get("/api/v1/cost_entries", headers=bearer(token)).json()["data"]
    assert (row["amount_cents"], row["period_start"], row["vendor_name"]) == (
        12,
        "2026-04-01",
        "Google Cloud",
    )


def test_the_connection_is_the_accounts_focus_connection_stamped_by_the_import(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R40: the account's connection for the platform, made when missing, synced.
    token = account_with(engine, fx={"EUR": "1.1"})
    bill, rules = _files(tmp_path)
    assert airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules).exit_code == 0
    (connection,) = client.get("/api/v1/integrations", headers=bearer(token)).json()["data"]
    assert connection["platform"] == "focus"
    assert connection["last_sync_status"] == "succeeded"
    first_sync = connection["last_synced_at"]
    entries = client.get("/api/v1/cost_entries", headers=bearer(token)).json()["data"]
    assert {row["source"]["connection_id"] for row in entries} == {connection["id"]}
    # Stamped with the load's own moment: the entries' updated_at (SEMANTICS R32).
    assert {row["updated_at"] for row in entries} == {first_sync}

    again = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules)
    assert again.exit_code == 0
    (connection,) = client.get("/api/v1/integrations", headers=bearer(token)).json()["data"]
    assert connection["last_synced_at"] > first_sync  # it synced again; no second connection


def test_an_import_under_a_given_connection_of_another_account_is_refused(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    from tests.factories import BundleBuilder

    other = BundleBuilder(first_id=500)
    elsewhere = other.account(name="Other")
    connection = other.integration(elsewhere, platform="focus")
    other.load(engine)
    bill, rules = _files(tmp_path)
    result = airoi_import(
        db_url, "focus", bill, "--account", "1", "--rules", rules, "--connection", str(connection)
    )
    assert result.exit_code == 1
    assert f"--connection: {connection} is not a connection of account 1" in result.output


def test_dry_run_reports_and_writes_nothing(engine: Engine, db_url: str, tmp_path: Path) -> None:
    from tests.imports.helpers import snapshot

    account_with(engine, fx={"EUR": "1.1"})
    bill, rules = _files(tmp_path)
    before = snapshot(engine)
    result = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Cost entries would be: inserted 3" in result.output
    assert snapshot(engine) == before
