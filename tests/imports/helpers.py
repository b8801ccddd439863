"""What the import tests share: the command run in this process, the store read whole, and
an account to import into."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import Result
from sqlalchemy import Engine, select
from typer.testing import CliRunner

from airoi.cli import app
from airoi.db.tables import metadata
from tests.factories import BundleBuilder

TOKEN = "airoi_import-tests-" + "t" * 32


def airoi_import(db_url: str, *args: str | Path, env: dict[str, str] | None = None) -> Result:
    """`airoi import ARGS` against the store of `db_url`, in this process."""
    return CliRunner().invoke(
        app,
        ["import", *(str(arg) for arg in args)],
        env={"AIROI_DATABASE_URL": db_url, "COLUMNS": "400", **(env or {})},
        catch_exceptions=False,
    )


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted: two equal snapshots mean nothing was written."""
    with engine.connect() as conn:
        return {
            table.name: sorted((tuple(row) for row in conn.execute(select(table))), key=repr)
            for table in metadata.sorted_tables
        }


def account_with(
    engine: Engine,
    *,
    initiatives: Sequence[int] = (101, 102, 103),
    fx: dict[str, str] | None = None,
    currency: str = "USD",
) -> str:
    """Account 1 with an owner (whose token is returned), the initiatives, FX rates."""
    builder = BundleBuilder(first_id=1)
    account = builder.account(currency=currency)
    owner = builder.user(account, role="owner")
    builder.token(owner, secret=TOKEN)
    for initiative in initiatives:
        builder.initiative(account, id=initiative, title=f"Initiative {initiative}")
    for code, rate in (fx or {}).items():
        builder.fx_rate(account, code, rate, "2020-01-01")
    builder.load(engine)
    return TOKEN


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path
