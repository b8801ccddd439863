"""Write a large, deterministic bundle (BUNDLE.md) for load and paging benchmarks.

    python -m bench.make_bundle out.json [--accounts 100] [--cost-entries 1000000]
        [--value-entries 200000] [--observations 100000] [--initiatives 2000] [--budgets]

The large account (id 1, USD with EUR rates) has an Owner whose token is BENCH_TOKEN,
`--initiatives` initiatives, `--cost-entries` cost entries spread over them and over 36
months (every tenth in EUR), `--value-entries` value entries, `--observations` readings of
20 metrics and, with `--budgets`, budget versions on three initiatives in four. The other
`--accounts` - 1 accounts are small (10 initiatives, 1,000 cost entries, and a hundredth of
the large account's value entries and observations each) and share the same tables and
months, as a store serving many accounts would. The defaults are the full dataset; the
benchmarks ask for what they measure. Records are written one at a time, so memory stays
flat whatever the size.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

BENCH_TOKEN = "airoi_bench-token-" + "b" * 40
ACCOUNT_ID = 1
OWNER_ID = 1
COST_TYPES = ("software", "tokens", "infrastructure", "implementation")
METRICS_PER_ACCOUNT = 20
# Each of the other accounts, beside the large one.
SMALL_INITIATIVES = 10
SMALL_COST_ENTRIES = 1_000
SMALL_SHARE = 100  # a small account has 1/100 of the large one's values and observations


def _write_array(out: IO[str], key: str, records: Any, first: bool = False) -> int:
    out.write(("" if first else ",\n") + json.dumps(key) + ": [\n")
    count = 0
    for i, record in enumerate(records):
        out.write(("" if i == 0 else ",\n") + json.dumps(record, separators=(",", ":")))
        count += 1
    out.write("\n]")
    return count


@dataclass(frozen=True)
class _Account:
    """One account's share of the bundle, with the first id of each of its kinds."""

    id: int
    initiatives: int
    cost_entries: int
    value_entries: int
    observations: int
    first_initiative: int
    first_cost: int
    first_value: int
    first_observation: int
    first_metric: int

    def initiative(self, rng: random.Random) -> int:
        return self.first_initiative + rng.randrange(self.initiatives)


def _accounts(
    accounts: int, cost_entries: int, initiatives: int, value_entries: int, observations: int
) -> list[_Account]:
    shares = [(initiatives, cost_entries, value_entries, observations)]
    shares += [
        (
            SMALL_INITIATIVES,
            SMALL_COST_ENTRIES,
            value_entries // SMALL_SHARE,
            observations // SMALL_SHARE,
        )
    ] * (accounts - 1)
    out: list[_Account] = []
    firsts = [1, 1, 1, 1, 1]
    for offset, (n_init, n_cost, n_value, n_obs) in enumerate(shares):
        out.append(_Account(ACCOUNT_ID + offset, n_init, n_cost, n_value, n_obs, *firsts))
        firsts = [
            firsts[0] + n_init,
            firsts[1] + n_cost,
            firsts[2] + n_value,
            firsts[3] + n_obs,
            firsts[4] + METRICS_PER_ACCOUNT,
        ]
    return out


def _month(i: int) -> date:
    return date(2024 + (i % 36) // 12, (i % 12) + 1, 1)


def write_bundle(
    path: Path,
    *,
    cost_entries: int,
    initiatives: int,
    value_entries: int = 0,
    observations: int = 0,
    accounts: int = 1,
    budgets: bool = False,
    stamped: bool = True,
    seed: int = 7,
) -> int:
    """Write the bundle; the number of records it holds. `stamped=False` leaves out every
    `updated_at`, so that the load stamps all its rows with one moment (SEMANTICS R32)."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1)
    plan = _accounts(accounts, cost_entries, initiatives, value_entries, observations)
    written = 0

    def array(key: str, records: Any, first: bool = False) -> None:
        nonlocal written
        if not stamped:
            records = ({k: v for k, v in r.items() if k != "updated_at"} for r in records)
        written += _write_array(out, key, records, first)

    with path.open("w") as out:
        out.write("{\n")
        array(
            "accounts",
            ({"id": a.id, "name": f"Bench Co {a.id}"} for a in plan),
            first=True,
        )
        # The large account's Owner is user 1 (OWNER_ID); account n's is user n.
        array(
            "users",
            (
                {"id": a.id, "account_id": a.id, "name": f"Bench Owner {a.id}", "role": "owner"}
                for a in plan
            ),
        )
        array("tokens", [{"user_id": OWNER_ID, "token": BENCH_TOKEN}])
        array(
            "fx_rates",
            (
                {"account_id": a.id, "currency": "EUR", "rate": rate, "effective_from": day}
                for a in plan
                for rate, day in (("1.08", "2024-01-01"), ("1.12", "2025-01-01"))
            ),
        )
        array(
            "initiatives",
            (
                {"id": i, "account_id": a.id, "title": f"Initiative {i}", "stage": "live"}
                for a in plan
                for i in range(a.first_initiative, a.first_initiative + a.initiatives)
            ),
        )

        def costs() -> Iterator[dict[str, Any]]:
            for a in plan:
                for i in range(a.first_cost, a.first_cost + a.cost_entries):
                    created = start + timedelta(seconds=i * 60)
                    kind = COST_TYPES[i % 4]
                    yield {
                        "id": i,
                        "initiative_id": a.initiative(rng),
                        "amount_cents": rng.randint(-500, 500_000),
                        "currency": "EUR" if i % 10 == 0 else "USD",
                        "cost_type": kind,
                        "cost_category": "capex" if kind == "implementation" else "opex",
                        "period_start": _month(i).isoformat(),
                        "vendor_name": f"Vendor {i % 25}",
                        "description": f"Usage {i}",
                        "created_at": created.isoformat() + "Z",
                        "updated_at": created.isoformat() + "Z",
                    }

        array("cost_entries", costs())

        def values() -> Iterator[dict[str, Any]]:
            statuses = ("approved", "approved", "draft", "reviewed", "disputed")
            for a in plan:
                for i in range(a.first_value, a.first_value + a.value_entries):
                    created = start + timedelta(seconds=i * 300)
                    yield {
                        "id": i,
                        "initiative_id": a.initiative(rng),
                        "amount_cents": rng.randint(0, 2_000_000),
                        "currency": "EUR" if i % 10 == 0 else "USD",
                        "status": statuses[i % 5],
                        "period_start": _month(i).isoformat(),
                        "created_at": created.isoformat() + "Z",
                        "updated_at": created.isoformat() + "Z",
                    }

        if value_entries:
            array("value_entries", values())

        def metrics() -> Iterator[dict[str, Any]]:
            for a in plan:
                for k in range(METRICS_PER_ACCOUNT):
                    yield {
                        "id": a.first_metric + k,
                        "account_id": a.id,
                        "metric_key": f"metric_{k}",
                        "name": f"Metric {k}",
                    }

        def readings() -> Iterator[dict[str, Any]]:
            for a in plan:
                for i in range(a.first_observation, a.first_observation + a.observations):
                    created = start + timedelta(seconds=i * 600)
                    yield {
                        "id": i,
                        "metric_id": a.first_metric + i % METRICS_PER_ACCOUNT,
                        "initiative_id": a.initiative(rng),
                        "value": round(rng.uniform(0, 1000), 2),
                        "role": "baseline" if i % 50 == 0 else "reading",
                        "observed_at": created.isoformat() + "Z",
                        "period_start": _month(i).isoformat(),
                        "created_at": created.isoformat() + "Z",
                        "updated_at": created.isoformat() + "Z",
                    }

        if observations:
            array("metrics", metrics())
            array("observations", readings())

        def versions() -> Iterator[dict[str, Any]]:
            version_id = 0
            for a in plan:
                for initiative in range(a.first_initiative, a.first_initiative + a.initiatives):
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
            array("budget_versions", versions())
        out.write("\n}\n")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--cost-entries", type=int, default=1_000_000)
    parser.add_argument("--value-entries", type=int, default=200_000)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--budgets", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    records = write_bundle(
        args.path,
        accounts=args.accounts,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        observations=args.observations,
        budgets=args.budgets,
    )
    print(f"wrote {args.path}: {records:,} records ({args.path.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
