"""The import's connection (SEMANTICS R40) is a connection like any other: `/integrations`
and the `list_integrations` tool show it, synced by the import, beside the account's others."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from tests.factories import BundleBuilder
from tests.imports.helpers import TOKEN, account_with, airoi_import, write_csv
from tests.tools.conftest import Served


def test_list_integrations_shows_each_import_like_any_connection(
    engine: Engine, db_url: str, served: Served, tmp_path: Path
) -> None:
    account_with(engine)
    more = BundleBuilder(first_id=700)
    more.integration(1, platform="zendesk", name="Support desk", status="error")
    more.load(engine)
    bill = write_csv(
        tmp_path / "bill.csv",
        ("BillingCurrency", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd"),
        [("USD", "1.25", "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z")],
    )
    rules = tmp_path / "rules.toml"
    rules.write_text("[[map]]\ninitiative_id = 101\n", encoding="utf-8")
    assert airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules).exit_code == 0
    sheet = write_csv(tmp_path / "m.csv", ("id", "metric_key", "name"), [("31", "hours", "Hours")])
    assert airoi_import(db_url, "table", "metrics", sheet, "--account", "1").exit_code == 0

    served_rows = served.api(TOKEN, "/integrations")["data"]
    tool = served.ok(TOKEN, "list_integrations")
    by_platform = {row["platform"]: row for row in tool["integrations"]}
    assert set(by_platform) == {"zendesk", "focus", "spreadsheet"}
    for row in served_rows:
        listed = by_platform[row["platform"]]
        assert (listed["id"], listed["last_synced_at"], listed["last_sync_status"]) == (
            row["id"],
            row["last_synced_at"],
            row["last_sync_status"],
        )
    assert by_platform["focus"]["last_sync_status"] == "succeeded"
    assert by_platform["spreadsheet"]["last_sync_status"] == "succeeded"
    assert by_platform["zendesk"]["last_sync_status"] is None
    assert served.api(TOKEN, "/metrics")["data"][0]["metric_key"] == "hours"
