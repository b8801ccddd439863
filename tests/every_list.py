"""A store holding rows of every served list, made of what a row's JSON gets wrong first: texts
JSON escapes (and some it must not), extreme integers, floats, nulls, absent people, and two
load stamps, so that a walk crosses from one to the next (SQLite's two seeks).

`every_list(engine)` loads it through the real loader and says how many rows each list holds
for the account it made; another account's rows sit beside them, never served to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine

from airoi.load import load_bundle
from tests.factories import BundleBuilder

EARLY = datetime(2026, 3, 1, 9, 0, 0)
LATER = datetime(2026, 3, 2, 9, 0, 0, 125_000)
# Every character JSON escapes, then some it must not: the loader's texts reach the page.
CONTROL = "".join(chr(i) for i in range(1, 0x20))
TRICKY = [
    CONTROL,
    'quote " backslash \\ slash / tab \t del \x7f',
    "é 中文 😀 \u2028 \u2029 \ufeff \u200f",
    "",
]
OUTCOMES = ("continue", "scale", "fix", "pause", "retire")
# Every list but /budgets (its rows are computed: tests/test_budgets.py).
LISTS = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
    "deletions",
)


@dataclass(frozen=True)
class EveryList:
    token: str
    account: int
    rows: dict[str, int]  # how many rows each list holds for `account`


def _initiatives(b: BundleBuilder, acct: int, people: list[int | None]) -> list[int]:
    made = []
    for k, text in enumerate(TRICKY):
        made.append(
            b.initiative(
                acct,
                title=text or "untitled",
                description=text,
                hypothesis=text[::-1] or None,
                stage=("identified", "live", "paused", "completed")[k],
                is_sample=k == 2,
                category=text or None,
                priority=(None, 0, -3, 2**31 - 1)[k],
                source=text or None,
                owner_id=people[k % len(people)],
                confidence_score=(0.1, None, 1e-7, 1 / 3)[k],
                roi_time_horizon_years=(1, None, 3, 0)[k],
                currency=("USD", "EUR", None, "USD")[k],
                expected_capex_cents=(2**62, None, -5, 0)[k],
                expected_opex_cents=(1, 2, None, 3)[k],
                started_at=(None, "2026-01-02T03:04:05.678Z", "0999-01-01T00:00:00Z", None)[k],
                went_live_at="2026-02-01T00:00:00Z" if k else None,
                closed_at="2026-02-01T00:00:00.001Z" if k == 3 else None,
                submitted_for_review_at="2025-12-31T23:59:59.999Z",
            )
        )
    return made


def _entries(b: BundleBuilder, acct: int, initiative: int, connection: int) -> list[int]:
    """Cost and value entries and readings; the ids of three cost entries to delete."""
    for k, text in enumerate(TRICKY):
        b.cost_entry(
            initiative,
            amount_cents=[2**60, -(2**59), 0, None][k],
            currency=None if k == 3 else "USD",
            description=text,
            notes=None if k == 1 else text[::-1],
            vendor_name=text or None,
            is_estimated=k % 2 == 0,
            locked=k == 1,
            period_start=None if k == 2 else f"0{k + 1}01-0{k + 1}-0{k + 1}",
            period_end=f"2026-12-{k + 10}" if k else None,
            source_type="csv" if k else None,
            source_ref=text or None,
        )
        b.value_entry(
            initiative,
            amount_cents=[2**60, None, -1, 0][k],
            status=("approved", "draft", "disputed", "approved")[k],
            entry_type=text or None,
            period_start=None if k == 1 else "2026-01-01",
            confidence_score=(0.5, None, 1 / 3, 1e300)[k],
            quality_score=(None, 0.0, -2.5, 0.1)[k],
            notes=text or None,
            calculation_version=(None, 1, 2**31 - 1, 0)[k],
            approved_at="2026-02-03T04:05:06.007Z" if k in (0, 3) else None,
            source_type="sync" if k else None,
            source_connection_id=connection if k == 2 else None,
        )
        b.observation(
            account_id=acct,
            metric_key=f"metric_{k}",
            initiative_id=initiative if k else None,
            value=(1.0, None, 1 / 3, -1e-300)[k],
            role=("baseline", "reading", None, "reading")[k],
            baseline_method=text or None,
            observed_at=None if k == 3 else f"2026-01-0{k + 1}T10:00:00.{k}5Z",
            is_estimated=k == 1,
            sample_size=(None, 0, 2**31 - 1, 7)[k],
            quality_score=(0.25, None, 0.1, 1e-7)[k],
            source_ref=text or None,
        )
    return [b.cost_entry(initiative, description="doomed") for _ in range(3)]


def _decisions(
    b: BundleBuilder, acct: int, initiatives: list[int], people: list[int | None]
) -> None:
    for k in range(10):
        b.decision(
            acct,
            outcome=OUTCOMES[k % 5],
            subject_title=TRICKY[k % 4] or "untitled",
            rationale=TRICKY[(k + 1) % 4],
            stage_before=("live", "paused")[k % 2],
            stage_after=("live", "paused", "completed")[k % 3],
            initiative_id=initiatives[k % 4] if k < 8 else None,
            decided_at=None if k % 3 == 0 else f"2026-01-0{k % 9 + 1}T10:00:00.5Z",
            decided_by_id=people[k % len(people)],
            next_review_on=None if k % 2 else f"2026-0{k % 9 + 1}-15",
            currency=None if k == 4 else "USD",
            approved_value_cents=(None, 0, 2**40, -7)[k % 4],
            cost_to_date_cents=k * 1000,
            net_cents=None if k == 2 else -k,
            planned_value_cents=k,
            roi=(None, 0.5, -1.25, 1 / 3, 12345.678901234)[k % 5],
        )


def _integrations(b: BundleBuilder, acct: int, people: list[int | None]) -> int:
    made = []
    for k in range(6):
        made.append(
            b.integration(
                acct,
                platform=("openai", "anthropic", "azure", TRICKY[2])[k % 4],
                name=TRICKY[k % 4] or None,
                description=TRICKY[(k + 2) % 4] or None,
                status=("active", "paused", "error", "disconnected")[k % 4],
                auth_type=(None, "api_key", "oauth")[k % 3],
                last_sync_status=TRICKY[k % 4] or None,
                last_synced_at=None if k % 2 else "2026-01-01T00:00:00.010Z",
                reauth_required_at="2026-02-02T02:02:02Z" if k == 3 else None,
                external_account_id=TRICKY[k % 4] or None,
                primary_source_categories=[[], ["cost"], TRICKY[:3], ["a", "b"]][k % 4],
                metric_categories=[["x"], [], [TRICKY[2]], ["é"]][k % 4],
                connected_by_id=people[k % len(people)],
                credentials={"api_key": "never served"},
                settings={"region": "eu"},
                last_error="never served either",
            )
        )
    return made[0]


def every_list(engine: Engine) -> EveryList:
    b = BundleBuilder()
    acct = b.account(name="Tricky")
    ada = b.user(acct, name=TRICKY[2])
    bob = b.user(acct, name=TRICKY[0], email=None)
    token = b.token(ada)
    b.fx_rate(acct, "EUR", "1.1", "2020-01-01")
    people: list[int | None] = [ada, None, bob]
    initiatives = _initiatives(b, acct, people)
    connection = _integrations(b, acct, people)
    doomed = _entries(b, acct, initiatives[1], connection)
    _decisions(b, acct, initiatives, people)
    for k, text in enumerate(TRICKY):
        b.metric(
            acct,
            metric_key=f"metric_{k}",
            name=text or "unnamed",
            description=TRICKY[(k + 1) % 4] or None,
            metric_type=(None, "count", "currency", "duration")[k],
            unit=text or None,
            currency_metric=k % 2 == 0,
            active=k != 3,
        )
    # Another account's rows, beside them in every table.
    other = b.account(name="Other")
    b.integration(other, connected_by_id=b.user(other))
    other_initiative = b.initiative(other, title="Not theirs")
    b.cost_entry(other_initiative)
    b.value_entry(other_initiative)
    b.metric(other)
    b.decision(other, initiative_id=other_initiative)
    b.load(engine, now=EARLY)

    # Later stamps, and tombstones (SEMANTICS R34).
    later = BundleBuilder(first_id=10_000)
    for k in range(2):
        later.initiative(acct, title=f"later {k}", owner_id=ada)
        later.cost_entry(initiatives[0], description=f"later {k}", is_estimated=True)
        later.value_entry(initiatives[0], status="reviewed")
        later.metric(acct, metric_key=f"later_{k}", name=f"later {k}")
        later.observation(account_id=acct, metric_key=f"later_{k}", value=float(k))
        later.decision(acct, outcome="scale", initiative_id=initiatives[0], decided_by_id=bob)
        later.integration(acct, platform="later", connected_by_id=ada)
    load_bundle(engine, dict(later.data), now=LATER)
    load_bundle(engine, {"delete": {"cost_entries": doomed}}, now=LATER)
    rows = {
        "initiatives": len(TRICKY) + 2,
        "cost_entries": len(TRICKY) + 2,
        "value_entries": len(TRICKY) + 2,
        "metrics": len(TRICKY) + 2,
        "observations": len(TRICKY) + 2,
        "decisions": 10 + 2,
        "integrations": 6 + 2,
        "deletions": len(doomed),
    }
    return EveryList(token, acct, rows)
