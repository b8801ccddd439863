"""Re-imports (SEMANTICS R41): an import is authoritative for the dates it covers. The same
files twice change nothing; a corrected bill updates what changed and deletes what vanished
(served by /deletions); nothing outside the covered dates, another billing account or another
connection moves. A copy pulled and verified stays exact across re-imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.imports.helpers import account_with, airoi_import, write_csv

HEADER = (
    "BillingAccountId",
    "BillingCurrency",
    "EffectiveCost",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ProviderName",
    "ServiceName",
)
RULES = "[[map]]\ninitiative_id = 101\n"


def day(billing: str, on: str, service: str, cost: str) -> tuple[str, ...]:
    return (billing, "USD", cost, f"{on}T00:00:00Z", f"{on}T23:00:00Z", "AWS", service)


MARCH = [
    day("A1", "2026-03-01", "Amazon Bedrock", "10.00"),
    day("A1", "2026-03-02", "Amazon Bedrock", "20.00"),
    day("A1", "2026-03-02", "Amazon SageMaker", "5.00"),
    day("A1", "2026-03-03", "Amazon Bedrock", "30.00"),
]


def _import(
    db_url: str, tmp_path: Path, name: str, rows: list[tuple[str, ...]], *extra: str
) -> str:
    bill = write_csv(tmp_path / name, HEADER, rows)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    result = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules, *extra)
    assert result.exit_code == 0, result.output
    return result.output


def _entries(client: TestClient[Litestar], token: str) -> dict[tuple[str, str], dict[str, Any]]:
    rows = client.get("/api/v1/cost_entries?limit=500", headers=bearer(token)).json()["data"]
    return {(row["period_start"], row["description"]): row for row in rows}


def test_the_same_files_twice_change_nothing(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R41
    token = account_with(engine)
    first = _import(db_url, tmp_path, "march.csv", MARCH)
    assert "inserted 4, updated 0, unchanged 0, deleted 0" in first
    before = _entries(client, token)
    again = _import(db_url, tmp_path, "march.csv", MARCH)
    assert "inserted 0, updated 0, unchanged 4, deleted 0" in again
    assert _entries(client, token) == before  # updated_at included
    assert client.get("/api/v1/deletions", headers=bearer(token)).json()["data"] == []


def test_a_corrected_bill_updates_and_deletes_only_in_its_dates(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R41, R34: the corrected bill covers 2 and 3 March: Bedrock on the 2nd is now
    # 22.00, SageMaker is gone from the 2nd, the 3rd is unchanged; 1 March is not covered.
    token = account_with(engine)
    _import(db_url, tmp_path, "march.csv", MARCH)
    before = _entries(client, token)
    corrected = [
        day("A1", "2026-03-02", "Amazon Bedrock", "22.00"),
        day("A1", "2026-03-03", "Amazon Bedrock", "30.00"),
    ]
    report = _import(db_url, tmp_path, "corrected.csv", corrected)
    assert "inserted 0, updated 1, unchanged 1, deleted 1" in report
    assert "Dates covered: 2026-03-02 to 2026-03-03" in report
    after = _entries(client, token)
    assert set(after) == set(before) - {("2026-03-02", "Amazon SageMaker")}
    assert after[("2026-03-02", "Amazon Bedrock")]["amount_cents"] == 2_200
    assert (
        after[("2026-03-02", "Amazon Bedrock")]["id"]
        == before[("2026-03-02", "Amazon Bedrock")]["id"]
    )
    assert (
        after[("2026-03-02", "Amazon Bedrock")]["updated_at"]
        > before[("2026-03-01", "Amazon Bedrock")]["updated_at"]
    )
    for unchanged in (("2026-03-01", "Amazon Bedrock"), ("2026-03-03", "Amazon Bedrock")):
        assert after[unchanged] == before[unchanged]
    (tombstone,) = client.get("/api/v1/deletions", headers=bearer(token)).json()["data"]
    assert tombstone["resource"] == "cost_entries"
    assert tombstone["id"] == before[("2026-03-02", "Amazon SageMaker")]["id"]
    roi = client.get("/api/v1/roi?window=all", headers=bearer(token)).json()
    assert roi["total_cost_cents"] == 1_000 + 2_200 + 3_000


def test_from_and_to_bound_what_an_import_replaces_and_reads(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R41: --from/--to are the covered dates; rows outside them are left out.
    token = account_with(engine)
    _import(db_url, tmp_path, "march.csv", MARCH)
    only_the_3rd = [day("A1", "2026-03-02", "Amazon Bedrock", "99.00")]
    report = _import(
        db_url, tmp_path, "late.csv", only_the_3rd, "--from", "2026-03-03", "--to", "2026-03-03"
    )
    # The file's 2 March row is outside; 3 March is covered and the file has nothing for it.
    assert "outside --from/--to: 1" in report
    assert "inserted 0, updated 0, unchanged 0, deleted 1" in report
    after = _entries(client, token)
    assert ("2026-03-03", "Amazon Bedrock") not in after
    assert after[("2026-03-02", "Amazon Bedrock")]["amount_cents"] == 2_000


def test_another_billing_account_deletes_nothing_of_the_first(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R41: one connection takes the exports of several billing accounts.
    token = account_with(engine)
    _import(db_url, tmp_path, "a1.csv", MARCH)
    report = _import(
        db_url, tmp_path, "b2.csv", [day("B2", "2026-03-02", "Amazon Bedrock", "7.00")]
    )
    assert "inserted 1, updated 0, unchanged 0, deleted 0" in report
    assert len(_entries(client, token)) == 4  # B2's entry has A1's key but for the account
    rows = client.get("/api/v1/cost_entries?limit=500", headers=bearer(token)).json()["data"]
    assert len(rows) == 5
    assert sum(row["amount_cents"] for row in rows) == 1_000 + 2_000 + 500 + 3_000 + 700


def test_another_connection_is_untouched(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    token = account_with(engine)
    from tests.factories import BundleBuilder

    more = BundleBuilder(first_id=900)
    other = more.integration(1, platform="aws", name="Second cloud")
    more.load(engine)
    _import(db_url, tmp_path, "march.csv", MARCH)  # under the account's focus connection, made
    moved = _import(
        db_url, tmp_path, "other.csv", [day("A1", "2026-03-02", "Amazon Bedrock", "1.00")],
        "--connection", "900",
    )  # fmt: skip
    assert other == 900
    assert "inserted 1, updated 0, unchanged 0, deleted 0" in moved
    assert (
        len(client.get("/api/v1/cost_entries?limit=500", headers=bearer(token)).json()["data"]) == 5
    )
