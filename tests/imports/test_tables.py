"""`airoi import table KIND FILE` (IMPORT.md; SEMANTICS R42): CSV, XLSX and Parquet, one
record a row; rows without id matched by their source ref; a bad cell named by file, line and
column with nothing written; the bundle takes the same id-less records."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.load import BundleError, load_bundle
from airoi.load.keyed import MADE_IDS_BELOW, MADE_IDS_FROM
from tests.conftest import bearer
from tests.imports.helpers import account_with, airoi_import, snapshot, write_csv

VALUE_HEADER = ("source_ref", "initiative_id", "amount_cents", "currency", "status",
                "period_start", "is_estimated", "notes")  # fmt: skip
VALUE_ROWS = [
    ("sheet-1", "101", "125000", "USD", "approved", "2026-02-01", "no", "Q1 savings"),
    ("sheet-2", "102", "", "", "reviewed", "2026-02-15", "", ""),
]


def _values(client: TestClient[Litestar], token: str) -> dict[str, dict[str, object]]:
    rows = client.get("/api/v1/value_entries?limit=500", headers=bearer(token)).json()["data"]
    return {row["source"]["ref"]: row for row in rows}


def test_csv_rows_keyed_by_source_ref_are_made_then_updated(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R42
    token = account_with(engine)
    sheet = write_csv(tmp_path / "value.csv", VALUE_HEADER, VALUE_ROWS)
    result = airoi_import(db_url, "table", "value_entries", sheet, "--account", "1")
    assert result.exit_code == 0, result.output
    assert "inserted 2, updated 0, unchanged 0" in result.output
    made = _values(client, token)
    assert made["sheet-1"]["amount_cents"] == 125_000
    assert made["sheet-1"]["is_estimated"] is False
    assert made["sheet-2"]["amount_cents"] is None  # an empty cell is null
    for row in made.values():
        assert MADE_IDS_FROM <= row["id"] < MADE_IDS_BELOW  # given by the store

    again = airoi_import(db_url, "table", "value_entries", sheet, "--account", "1")
    assert "inserted 0, updated 0, unchanged 2" in again.output
    changed = write_csv(
        tmp_path / "value.csv",
        ("source_ref", "initiative_id", "amount_cents"),
        [("sheet-2", "102", "9900")],  # status and the rest left out: kept (R33)
    )
    third = airoi_import(db_url, "table", "value_entries", changed, "--account", "1")
    assert "inserted 0, updated 1, unchanged 0" in third.output
    after = _values(client, token)
    assert after["sheet-2"]["id"] == made["sheet-2"]["id"]
    assert (after["sheet-2"]["amount_cents"], after["sheet-2"]["status"]) == (9_900, "reviewed")
    assert after["sheet-1"] == made["sheet-1"]


def test_xlsx_and_parquet_cells_take_their_types(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    token = account_with(engine)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(
        ["id", "initiative_id", "amount_cents", "status", "period_start", "confidence_score"]
    )
    sheet.append([7001, 101, 50000.0, "approved", datetime(2026, 1, 31), 0.8])
    sheet.append([None, None, None, None, None, None])  # a spreadsheet's blank row
    book.save(tmp_path / "values.xlsx")
    table = pa.table(
        {
            "source_ref": ["pq-1"],
            "initiative_id": pa.array([103], type=pa.int64()),
            "amount_cents": pa.array([-2500], type=pa.int64()),
            "status": ["approved"],
            "period_start": pa.array([date(2026, 3, 1)], type=pa.date32()),
        }
    )
    pq.write_table(table, tmp_path / "values.parquet")
    for name in ("values.xlsx", "values.parquet"):
        result = airoi_import(db_url, "table", "value_entries", tmp_path / name, "--account", "1")
        assert result.exit_code == 0, result.output
    rows = client.get("/api/v1/value_entries", headers=bearer(token)).json()["data"]
    served = {(row["initiative_id"], row["amount_cents"], row["period_start"]) for row in rows}
    assert served == {(101, 50_000, "2026-01-31"), (103, -2_500, "2026-03-01")}
    assert [row["id"] for row in rows if row["initiative_id"] == 101] == [7001]


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("12.5", "'12.5' is not a whole number"),
        ("lots", "'lots' is not a whole number"),
    ],
)
def test_a_bad_cell_is_named_by_line_and_column_and_nothing_is_written(
    engine: Engine, db_url: str, tmp_path: Path, cell: str, message: str
) -> None:
    account_with(engine)
    rows = [VALUE_ROWS[0], ("sheet-3", "101", cell, "USD", "approved", "2026-02-01", "", "")]
    sheet = write_csv(tmp_path / "bad.csv", VALUE_HEADER, rows)
    before = snapshot(engine)
    result = airoi_import(db_url, "table", "value_entries", sheet, "--account", "1")
    assert result.exit_code == 1
    assert f"bad.csv: line 3, column amount_cents: {message}" in result.output
    assert snapshot(engine) == before


def test_a_problem_the_load_finds_is_named_by_line_and_column(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    account_with(engine)
    rows = [VALUE_ROWS[0], ("sheet-9", "999", "5", "USD", "approved", "2026-02-01", "", "")]
    sheet = write_csv(tmp_path / "bad.csv", VALUE_HEADER, rows)
    before = snapshot(engine)
    result = airoi_import(db_url, "table", "value_entries", sheet, "--account", "1")
    assert result.exit_code == 1
    assert "bad.csv: line 3, column initiative_id: no initiative 999" in result.output
    assert snapshot(engine) == before


def test_an_unknown_column_and_a_row_with_neither_id_nor_ref(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    account_with(engine)
    unknown = write_csv(tmp_path / "u.csv", ("source_ref", "initiative_id", "amount"), [])
    result = airoi_import(db_url, "table", "cost_entries", unknown, "--account", "1")
    assert result.exit_code == 1
    assert "u.csv: line 1, column amount: not a field of cost_entries" in result.output
    neither = write_csv(tmp_path / "n.csv", ("initiative_id", "amount_cents"), [("101", "5")])
    result = airoi_import(db_url, "table", "cost_entries", neither, "--account", "1")
    assert result.exit_code == 1
    assert "n.csv: line 2, column id: required (or a source ref" in result.output


def test_template_names_the_columns_the_import_takes(db_url: str, tmp_path: Path) -> None:
    result = airoi_import(db_url, "table", "cost_entries", "--template")
    assert result.exit_code == 0
    header = result.output.strip().split(",")
    assert header[:3] == ["id", "account_id", "initiative_id"]
    assert {"amount_cents", "source_type", "source_ref", "source_connection_id"} <= set(header)
    assert "updated_at" not in header


def test_a_template_row_filled_in_imports(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    token = account_with(engine)
    header = airoi_import(db_url, "table", "initiatives", "--template").output.strip()
    columns = header.split(",")
    values = {"id": "104", "title": "Invoice matching", "stage": "identified", "priority": "2"}
    sheet = tmp_path / "initiatives.csv"
    sheet.write_text(
        header + "\n" + ",".join(values.get(name, "") for name in columns) + "\n", encoding="utf-8"
    )
    result = airoi_import(db_url, "table", "initiatives", sheet, "--account", "1")
    assert result.exit_code == 0, result.output
    row = client.get("/api/v1/initiatives/104", headers=bearer(token)).json()
    assert (row["title"], row["stage"], row["priority"]) == ("Invoice matching", "identified", 2)


def test_the_bundle_takes_id_less_records_by_source_ref(engine: Engine) -> None:
    # SEMANTICS R42 in a bundle: matched by (account, kind, connection, ref); neither refused.
    account_with(engine)
    record = {"initiative_id": 101, "amount_cents": 500, "source": {"ref": "inv-1"}}
    first = load_bundle(engine, {"cost_entries": [record]})
    assert first.inserted["cost_entries"] == 1
    second = load_bundle(engine, {"cost_entries": [{**record, "amount_cents": 600}]})
    assert second.updated["cost_entries"] == 1
    assert second.inserted.get("cost_entries", 0) == 0
    with pytest.raises(BundleError) as refused:
        load_bundle(engine, {"cost_entries": [{"initiative_id": 101, "amount_cents": 1}]})
    assert refused.value.problems == [
        "cost_entries[#0].id: required (or a source ref to match the row by, SEMANTICS R42)"
    ]
    with pytest.raises(BundleError) as twice:
        load_bundle(engine, {"cost_entries": [record, record]})
    assert "the same source ref as cost_entries[#0,source_ref=inv-1]" in twice.value.problems[0]


def test_a_deleted_rows_id_is_never_given_again(engine: Engine) -> None:
    # SEMANTICS R42: an id the store gave is never given to another row.
    from sqlalchemy import select

    from airoi.db.tables import cost_entries

    account_with(engine)
    record = {"initiative_id": 101, "amount_cents": 500, "source": {"ref": "gone"}}
    load_bundle(engine, {"cost_entries": [record]})
    with engine.connect() as conn:
        (first,) = conn.execute(select(cost_entries.c.id)).scalars()
    load_bundle(engine, {"delete": {"cost_entries": [first]}})
    load_bundle(engine, {"cost_entries": [{**record, "source": {"ref": "new"}}]})
    with engine.connect() as conn:
        (second,) = conn.execute(select(cost_entries.c.id)).scalars()
    assert second != first
