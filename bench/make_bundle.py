"""Write a large, deterministic bundle (BUNDLE.md) for load and paging benchmarks.

    python -m bench.make_bundle out.json --cost-entries 1000000 --initiatives 2000

One account (id 1) with an Owner whose token is BENCH_TOKEN, USD with EUR rates,
`--initiatives` initiatives, and `--cost-entries` cost entries spread over them and
over 36 months, every tenth in EUR. Records are written one at a time, so memory
stays flat whatever the size.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

BENCH_TOKEN = "airoi_bench-token-" + "b" * 40
ACCOUNT_ID = 1
OWNER_ID = 1
COST_TYPES = ("software", "tokens", "infrastructure", "implementation")


def _write_array(out: IO[str], key: str, records: Any, first: bool = False) -> None:
    out.write(("" if first else ",\n") + json.dumps(key) + ": [\n")
    for i, record in enumerate(records):
        out.write(("" if i == 0 else ",\n") + json.dumps(record, separators=(",", ":")))
    out.write("\n]")


def write_bundle(
    path: Path,
    *,
    cost_entries: int,
    initiatives: int,
    value_entries: int = 0,
    budgets: bool = False,
    seed: int = 7,
) -> None:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1)
    with path.open("w") as out:
        out.write("{\n")
        _write_array(out, "accounts", [{"id": ACCOUNT_ID, "name": "Bench Co"}], first=True)
        _write_array(
            out,
            "users",
            [{"id": OWNER_ID, "account_id": ACCOUNT_ID, "name": "Bench Owner", "role": "owner"}],
        )
        _write_array(out, "tokens", [{"user_id": OWNER_ID, "token": BENCH_TOKEN}])
        _write_array(
            out,
            "fx_rates",
            [
                {
                    "account_id": ACCOUNT_ID,
                    "currency": "EUR",
                    "rate": "1.08",
                    "effective_from": "2024-01-01",
                },
                {
                    "account_id": ACCOUNT_ID,
                    "currency": "EUR",
                    "rate": "1.12",
                    "effective_from": "2025-01-01",
                },
            ],
        )
        _write_array(
            out,
            "initiatives",
            (
                {"id": i, "account_id": ACCOUNT_ID, "title": f"Initiative {i}", "stage": "live"}
                for i in range(1, initiatives + 1)
            ),
        )

        def costs() -> Any:
            for i in range(1, cost_entries + 1):
                created = start + timedelta(seconds=i * 60)
                period = date(2024 + (i % 36) // 12, (i % 12) + 1, 1)
                kind = COST_TYPES[i % 4]
                yield {
                    "id": i,
                    "initiative_id": rng.randint(1, initiatives),
                    "amount_cents": rng.randint(-500, 500_000),
                    "currency": "EUR" if i % 10 == 0 else "USD",
                    "cost_type": kind,
                    "cost_category": "capex" if kind == "implementation" else "opex",
                    "period_start": period.isoformat(),
                    "vendor_name": f"Vendor {i % 25}",
                    "description": f"Usage {i}",
                    "created_at": created.isoformat() + "Z",
                    "updated_at": created.isoformat() + "Z",
                }

        _write_array(out, "cost_entries", costs())

        def values() -> Any:
            statuses = ("approved", "approved", "draft", "reviewed", "disputed")
            for i in range(1, value_entries + 1):
                created = start + timedelta(seconds=i * 300)
                yield {
                    "id": i,
                    "initiative_id": rng.randint(1, initiatives),
                    "amount_cents": rng.randint(0, 2_000_000),
                    "currency": "EUR" if i % 10 == 0 else "USD",
                    "status": statuses[i % 5],
                    "period_start": date(2024 + (i % 36) // 12, (i % 12) + 1, 1).isoformat(),
                    "created_at": created.isoformat() + "Z",
                    "updated_at": created.isoformat() + "Z",
                }

        if value_entries:
            _write_array(out, "value_entries", values())

        def versions() -> Any:
            version_id = 0
            for initiative in range(1, initiatives + 1):
                # Three in four initiatives have a budget; one in three of those a revision.
                if initiative % 4 == 0:
                    continue
                version_id += 1
                yield {
                    "id": version_id,
                    "initiative_id": initiative,
                    "effective_from": f"2024-{initiative % 12 + 1:02d}-01",
                    "capex_cents": 5_000_000,
                    "opex_cents": 900_000,
                    "opex_cadence": ("monthly", "quarterly", "annually")[initiative % 3],
                    "status": "approved",
                    "approved_at": "2024-01-01T00:00:00Z",
                }
                if initiative % 3 == 0:
                    version_id += 1
                    yield {
                        "id": version_id,
                        "initiative_id": initiative,
                        "effective_from": "2025-07-01",
                        "capex_cents": 6_000_000,
                        "opex_cents": 1_100_000,
                        "opex_cadence": "monthly",
                        "source": "revision",
                        "status": "approved",
                        "approved_at": "2025-06-15T00:00:00Z",
                    }

        if budgets:
            _write_array(out, "budget_versions", versions())
        out.write("\n}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--cost-entries", type=int, default=1_000_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--value-entries", type=int, default=0)
    parser.add_argument("--budgets", action="store_true")
    args = parser.parse_args()
    write_bundle(
        args.path,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        budgets=args.budgets,
    )
    print(f"wrote {args.path} ({args.path.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
