"""A walk behind cursors over rows that share one updated_at: every row once, in order, and a
deep page no dearer than the first.

One bulk load stamps all its rows with the same moment (SEMANTICS R32), so a copy walking
such an account pages through one long run of equal updated_at, ordered by id alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from airoi.db.engine import make_engine
from airoi.db.tables import cost_entries
from airoi.listing import Cursors
from airoi.reports.cost_entries import COST_ENTRIES
from tests.factories import BundleBuilder

ROWS = 1_200
LIMIT = 100
CURSORS = Cursors(b"k" * 32)


def _one_bulk_load(engine: Engine) -> int:
    b = BundleBuilder()
    acct = b.account()
    initiative = b.initiative(acct)
    for n in range(ROWS):
        b.cost_entry(initiative, amount_cents=100 + n)
    b.load(engine, now=datetime(2026, 5, 1, 12, 0, tzinfo=UTC))
    return acct


def _walk(db_url: str, account: int, on_page: Any = None) -> list[int]:
    reader = make_engine(db_url, read_only=True)
    ids: list[int] = []
    cursor = None
    try:
        with reader.connect() as conn:
            while True:
                if on_page is not None:
                    on_page(conn, len(ids))
                page = COST_ENTRIES.rows(conn, account, cursors=CURSORS, cursor=cursor, limit=LIMIT)
                ids += [row.id for row in page.rows]
                if not page.has_more:
                    return ids
                cursor = page.next_cursor
    finally:
        reader.dispose()


def test_a_walk_through_one_stamp_serves_every_row_once_in_order(
    db_url: str, engine: Engine
) -> None:
    account = _one_bulk_load(engine)
    with engine.connect() as conn:
        stamps = conn.execute(
            select(func.count(func.distinct(cost_entries.c.updated_at))).where(
                cost_entries.c.account_id == account
            )
        ).scalar()
        expected = list(
            conn.execute(
                select(cost_entries.c.id)
                .where(cost_entries.c.account_id == account)
                .order_by(cost_entries.c.id)
            ).scalars()
        )
    assert stamps == 1  # the premise: one load, one stamp
    assert len(expected) == ROWS
    assert _walk(db_url, account) == expected


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_deep_page_in_one_stamp_reads_no_more_than_the_first_on_sqlite(
    db_url: str, engine: Engine
) -> None:
    # SQLite seeks a row-value comparison on its first column only: the page 1,100 rows into
    # one stamp read those 1,100 rows again before its own (a whole walk: quadratic).
    account = _one_bulk_load(engine)
    steps: dict[int, int] = {}

    def count_steps(conn: Any, depth: int) -> None:
        counter = steps.setdefault(depth, 0)
        del counter

        def tick() -> int:
            steps[depth] += 1
            return 0

        conn.connection.driver_connection.set_progress_handler(tick, 100)

    assert len(_walk(db_url, account, count_steps)) == ROWS
    first, deep = steps[0], steps[ROWS - LIMIT]
    assert deep <= 2 * first, (first, deep)
