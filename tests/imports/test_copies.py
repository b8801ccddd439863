"""A copy stays exact across re-imports (SEMANTICS R41, R34, R35): `airoi pull` into DuckDB
after each import, then `airoi verify`, finds no difference, the corrected bill's deletion
included."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from airoi.client import Client
from tests.imports.helpers import account_with, airoi_import, write_csv
from tests.imports.test_reimport import HEADER, MARCH, RULES, day

pytest.importorskip("duckdb")

from airoi.client.pull import pull
from airoi.client.verify import verify


def test_pull_and_verify_stay_exact_across_reimports(
    engine: Engine,
    db_url: str,
    base_url: str,
    tmp_path: Path,
) -> None:
    # SEMANTICS R41: the same files, then a corrected bill; after each, pull and verify.
    token = account_with(engine, fx={"EUR": "1.25"})
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    eur = ("A1", "EUR", "8.004", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z", "AWS", "Bedrock")
    files = [
        write_csv(tmp_path / "march.csv", HEADER, [*MARCH, eur]),
        write_csv(tmp_path / "march.csv", HEADER, [*MARCH, eur]),
        write_csv(
            tmp_path / "fixed.csv",
            HEADER,
            [day("A1", "2026-03-02", "Amazon Bedrock", "21.505"), eur],
        ),
    ]
    target = tmp_path / "copy.duckdb"
    for bill in files:
        result = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules)
        assert result.exit_code == 0, result.output
        with Client(base_url, token) as api:
            pull(api, target, "duckdb")
            checked = verify(api, target, "duckdb", workers=2)
        assert checked.compared, "verify compared nothing"
        assert [c for c in checked.compared if c.service != c.copy] == []
    import duckdb

    with duckdb.connect(str(target), read_only=True) as copy:
        total = copy.execute("select sum(account_amount_cents) from cost_entries").fetchone()
    # 1 March 10.00 (not covered by the fix), 2 March Bedrock 21.505 -> 2,150 (half to even),
    # 4 March 8.004 EUR -> 800 EUR cents -> 1,000 USD cents at 1.25; the rest deleted.
    assert total == (1_000 + 2_150 + 1_000,)
