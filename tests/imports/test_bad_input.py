"""Bad input (IMPORT.md): each problem is one line on stderr naming the file, the row (line)
and the column; exit status 1; nothing written (the store compared before and after)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from sqlalchemy import Engine

from tests.imports.helpers import account_with, airoi_import, snapshot, write_csv
from tests.imports.test_focus import HEADER, MESSY, RULES


def _rules(tmp_path: Path, text: str = RULES) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _bill(
    tmp_path: Path, rows: list[tuple[str, ...]] | None = None, header: tuple[str, ...] = HEADER
) -> Path:
    return write_csv(tmp_path / "bill.csv", header, MESSY if rows is None else rows)


def _with(row: tuple[str, ...], **cells: str) -> tuple[str, ...]:
    changed = list(row)
    for name, value in cells.items():
        changed[HEADER.index(name)] = value
    return tuple(changed)


def _refused(engine: Engine, db_url: str, *args: str | Path) -> list[str]:
    before = snapshot(engine)
    result = airoi_import(db_url, "focus", *args)
    assert result.exit_code == 1, result.output
    assert snapshot(engine) == before
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("Nothing was imported")
    return lines[:-1]


def test_an_unknown_initiative_in_a_rule(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine, initiatives=(101,), fx={"EUR": "1.1"})  # 102 is not the account's
    lines = _refused(engine, db_url, _bill(tmp_path), "--account", "1", "--rules", _rules(tmp_path))
    assert lines == [
        "rules.toml: map[2].initiative_id: initiative 102 is not an initiative of account 1"
    ]


def test_a_currency_without_an_fx_rate(engine: Engine, db_url: str, tmp_path: Path) -> None:
    # SEMANTICS R5: the EUR row is line 7 of the file (the header is line 1).
    account_with(engine)
    lines = _refused(engine, db_url, _bill(tmp_path), "--account", "1", "--rules", _rules(tmp_path))
    assert lines == [
        "bill.csv: line 7, column BillingCurrency: no FX rate for EUR in account 1 (its "
        "currency is USD); load one first (R5)"
    ]


def test_a_missing_column_the_rules_need(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    header = tuple(name for name in HEADER if name != "ServiceCategory")
    rows = [tuple(c for n, c in zip(HEADER, row, strict=True) if n != "ServiceCategory")
            for row in MESSY]  # fmt: skip
    bill = _bill(tmp_path, rows, header)
    lines = _refused(engine, db_url, bill, "--account", "1", "--rules", _rules(tmp_path))
    assert lines == ["bill.csv: line 1, column ServiceCategory: missing (a rule's where names it)"]


def test_unmatched_rows_with_unmatched_fail(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    lines = _refused(
        engine, db_url, _bill(tmp_path), "--account", "1", "--rules", _rules(tmp_path),
        "--unmatched", "fail",
    )  # fmt: skip
    assert lines == [
        "bill.csv: line 8, column Tags.application: no rule takes this row "
        "(provider / service AWS / Amazon EC2; 2 such rows)"
    ]


@pytest.mark.parametrize(
    ("cells", "line"),
    [
        ({"EffectiveCost": "12,50"},
         "bill.csv: line 3, column EffectiveCost: '12,50' is not a decimal"),
        ({"EffectiveCost": "NaN"},
         "bill.csv: line 3, column EffectiveCost: 'NaN' is not a finite decimal"),
        ({"ChargePeriodStart": "2026-13-01 00:00:00"},
         "bill.csv: line 3, column ChargePeriodStart: '2026-13-01 00:00:00' is not an ISO 8601 "
         "date-time"),
        ({"ChargePeriodEnd": ""},
         "bill.csv: line 3, column ChargePeriodEnd: required: the row has no end"),
        ({"BillingCurrency": "NULL"},
         "bill.csv: line 3, column BillingCurrency: required: the row has no currency"),
        ({"BillingCurrency": "dollars"},
         "bill.csv: line 3, column BillingCurrency: 'dollars' is not a three-letter currency "
         "code"),
        ({"Tags": "{application: bot}"}, "bill.csv: line 3, column Tags: is not a JSON object"),
    ],
)  # fmt: skip
def test_a_bad_cell(
    engine: Engine, db_url: str, tmp_path: Path, cells: dict[str, str], line: str
) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    rows = list(MESSY)
    rows[1] = _with(rows[1], **cells)
    lines = _refused(
        engine, db_url, _bill(tmp_path, rows), "--account", "1", "--rules", _rules(tmp_path)
    )
    assert lines == [line]


def test_an_unreadable_file(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    whole = gzip.compress(_bill(tmp_path).read_bytes() * 2000)
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    lines = _refused(engine, db_url, cut, "--account", "1", "--rules", _rules(tmp_path))
    assert len(lines) == 1
    assert lines[0].startswith("cut.csv.gz: line ")
    assert "cannot be read as FOCUS" in lines[0]
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1" + b"\x00" * 64)
    lines = _refused(engine, db_url, junk, "--account", "1", "--rules", _rules(tmp_path))
    assert len(lines) == 1
    assert lines[0].startswith("junk.parquet: cannot be read as FOCUS Parquet")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[[map]]\ninitiative_id = 'x'\n", "rules.toml: map[1].initiative_id: required: the id"),
        ("amount = 'Cost'\n[[map]]\ninitiative_id = 101\n", "rules.toml: amount: must be one of"),
        ("colour = 1\n[[map]]\ninitiative_id = 101\n", "rules.toml: colour: unknown key"),
        ("[[map]\n", "rules.toml: not valid TOML"),
        ("cost_type = 'x'\n", "rules.toml: map: required: at least one [[map]] rule"),
    ],
)  # fmt: skip
def test_a_bad_rules_file(
    engine: Engine, db_url: str, tmp_path: Path, text: str, line: str
) -> None:
    account_with(engine, fx={"EUR": "1.1"})
    lines = _refused(
        engine, db_url, _bill(tmp_path), "--account", "1", "--rules", _rules(tmp_path, text)
    )
    assert len(lines) == 1
    assert lines[0].startswith(line)


def test_openai_rules_name_only_its_fields(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine)
    saved = tmp_path / "costs.json"
    saved.write_text('{"object": "page", "data": []}', encoding="utf-8")
    rules = _rules(tmp_path, '[[map]]\ninitiative_id = 101\nwhere = { workspace_id = "w" }\n')
    result = airoi_import(db_url, "openai", saved, "--account", "1", "--rules", rules)
    assert result.exit_code == 1
    assert "rules.toml: map[1].where.workspace_id: not a field of this source" in result.output
