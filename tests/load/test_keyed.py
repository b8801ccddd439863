"""Records keyed by their source ref (SEMANTICS R42) in numbers past one batch of the store's
round trips: each found again by its key, none made twice, on both stores."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from airoi.db.tables import cost_entries
from airoi.load import load_bundle
from tests.factories import BundleBuilder


def test_thousands_of_id_less_records_are_made_once_and_found_again(engine: Engine) -> None:
    # SEMANTICS R42
    b = BundleBuilder()
    account = b.account()
    initiative = b.initiative(account)
    connection = b.integration(account, platform="focus")
    b.load(engine)
    records = [
        {
            "initiative_id": initiative,
            "amount_cents": number,
            "account_id": account,
            "source": {"ref": f"row-{number}", "connection_id": connection if number % 2 else None},
        }
        for number in range(2_500)
    ]
    first = load_bundle(engine, {"cost_entries": records})
    assert first.inserted["cost_entries"] == 2_500
    again = load_bundle(engine, {"cost_entries": records})
    assert (again.inserted["cost_entries"], again.unchanged["cost_entries"]) == (0, 2_500)
    changed = load_bundle(
        engine, {"cost_entries": [{**record, "amount_cents": -1} for record in records[:1_200]]}
    )
    assert (changed.inserted["cost_entries"], changed.updated["cost_entries"]) == (0, 1_200)
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(cost_entries)).scalar()
        negative = conn.execute(
            select(func.count()).where(cost_entries.c.amount_cents < 0)
        ).scalar()
    assert (count, negative) == (2_500, 1_200)
