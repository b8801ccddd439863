"""Property: a copy of the entry lists reconciles with GET /roi, cent for cent (SEMANTICS R35).

Random accounts go through the real loader: an account currency that is not always USD,
entries in other currencies with several FX rates (some entries dated before the earliest
rate, some rates loaded or revised by a later load), null periods (the entry date then comes
from created_at, written with offsets near midnight), sample initiatives, refunds, null
amounts, every value status, entries on the edges of the windows and on 29 February, and a
fixed `today` (SEMANTICS R1). The lists are walked page by page through the HTTP API and:

1. for every window and scope, the sums of the served `account_amount_cents` over the entries
   whose served `reported_on` lies in the window equal /roi's figures (R7, R8, R9, R35);
2. every served `reported_on` and `account_amount_cents` equals R2 and R5 worked out here from
   the bundle's own values, in exact decimal arithmetic (nothing of airoi.finance is used);
3. `period_from` / `period_to` keep exactly the entries whose `reported_on` lies within (R11).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Decimal, Inexact, Rounded, localcontext
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.load import load_bundle
from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
MakeClient = Callable[[date], Client]
Row = dict[str, Any]

CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF")
STAGES = (
    "identified",
    "reviewing",
    "implementing",
    "live",
    "paused",
    "completed",
    "rejected",
    "dismissed",
)
STATUSES = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")
WINDOW_YEARS = {"1yr": 1, "3yr": 3, "5yr": 5}
WINDOW_LABELS = {
    "all": "All time",
    "1yr": "Last 12 months",
    "3yr": "Last 3 years",
    "5yr": "Last 5 years",
}
# Every example reuses one token secret, and a run (shrinking above all) asks far more than
# the default 600 requests a minute of it: this test lifts the limit.
UNLIMITED = "1000000/minute"
# A few days to be `today`, so that a handful of apps serve every example. 2028-02-29 is a
# leap day; from 2027-02-28 the 3yr window starts on 2024-02-29; from 2025-03-01 the 1yr
# window starts just after a 29 February.
TODAYS = (
    date(2026, 6, 15),
    date(2028, 2, 29),
    date(2027, 2, 28),
    date(2025, 3, 1),
    date(2024, 12, 31),
)
LEAP_DAYS = (date(2020, 2, 29), date(2024, 2, 29), date(2028, 2, 29))
# UTC offsets an entry's created_at may be written in (whole minutes, as ISO 8601 allows).
OFFSETS = tuple(timedelta(minutes=m) for m in (0, 60, -60, 330, -210, 345, 14 * 60, -12 * 60, -570))


# --------------------------------------------------------------------------- the rules, here


def window_span(window: str, today: date) -> tuple[date, date] | None:
    """SEMANTICS R8: [from, through]; None for `all`."""
    if window == "all":
        return None
    years = WINDOW_YEARS[window]
    if today.month == 2 and today.day == 29 and not is_leap(today.year - years):
        back = date(today.year - years, 2, 28)
    else:
        back = date(today.year - years, today.month, today.day)
    return back + timedelta(days=1), today


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def rate_on(
    fx: dict[str, dict[date, Decimal]], account_currency: str, currency: str, on: date
) -> Decimal:
    """SEMANTICS R5: the account currency is 1; otherwise the rate with the latest
    effective_from on or before `on`, or the earliest rate when none is that old."""
    if currency == account_currency:
        return Decimal(1)
    table = sorted(fx[currency].items())
    older = [rate for day, rate in table if day <= on]
    return older[-1] if older else table[0][1]


def account_amount(
    amount: int | None,
    currency: str | None,
    on: date,
    account_currency: str,
    fx: dict[str, dict[date, Decimal]],
) -> int | None:
    """SEMANTICS R5, R6: amount × rate(X) / rate(account), exact, half to even once."""
    if amount is None:
        return None
    source = account_currency if currency is None else currency
    with localcontext() as exact:
        exact.prec = 400
        exact.traps[Inexact] = True  # any rounding before the last step fails the test
        exact.traps[Rounded] = True
        value = (
            Decimal(amount)
            * rate_on(fx, account_currency, source, on)
            / rate_on(fx, account_currency, account_currency, on)
        )
    with localcontext() as wide:
        wide.prec = 400
        return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def within(day: date, span: tuple[date | None, date | None] | None) -> bool:
    if span is None:
        return True
    low, high = span
    return (low is None or low <= day) and (high is None or day <= high)


# --------------------------------------------------------------------------- random accounts


@dataclass(frozen=True)
class Entry:
    initiative: int  # index into the account's initiatives
    amount_cents: int | None
    currency: str | None
    period_start: date | None
    created_at: str | None  # as written in the bundle; None: the load's own moment
    created_on: date  # the UTC date of the moment created_at names, or of the load (R2)
    cost_category: str | None = None  # cost entries
    status: str | None = None  # value entries


@dataclass(frozen=True)
class AccountPlan:
    currency: str
    # Rates loaded with the account: currency -> effective_from -> rate text.
    rates: dict[str, dict[date, str]]
    # Rates a second load adds or revises (currency, effective_from, rate text).
    later_rates: tuple[tuple[str, date, str], ...]
    initiatives: tuple[tuple[bool, str], ...]  # (is_sample, stage)
    costs: tuple[Entry, ...]
    values: tuple[Entry, ...]

    def fx(self) -> dict[str, dict[date, Decimal]]:
        """The account's FX table once every load has run."""
        table = {c: {d: Decimal(r) for d, r in days.items()} for c, days in self.rates.items()}
        for currency, day, rate in self.later_rates:
            table.setdefault(currency, {})[day] = Decimal(rate)
        return table


@dataclass(frozen=True)
class Scenario:
    today: date
    loaded_at: datetime  # naive UTC: the first load's moment
    page_size: int
    accounts: tuple[AccountPlan, ...]
    period: tuple[date | None, date | None]


rate_texts = st.one_of(
    # Rates that make half-cent ties of odd amounts, and plain ones.
    st.sampled_from(["0.5", "1.5", "2.25", "1.125", "1", "0.0001", "150.25", "1.0825"]),
    st.builds(
        lambda whole, digits: f"{whole}.{digits}" if digits else str(whole),
        st.integers(0, 300),
        st.text("0123456789", max_size=12),
    ).filter(lambda text: Decimal(text) > 0),
)
amounts = st.one_of(
    st.none(),
    st.integers(-5_000, 5_000),  # refunds and small amounts (ties at the half cent)
    st.integers(-(10**9), 10**10),
)


def edge_days(today: date, rate_days: Iterable[date]) -> list[date]:
    """Days where an off-by-one would show: window bounds, leap days, rate changes."""
    one = timedelta(days=1)
    days = {today - one, today, today + one}
    for window in WINDOW_YEARS:
        span = window_span(window, today)
        assert span is not None
        days |= {span[0] - one, span[0], span[0] + one}
    for leap in LEAP_DAYS:
        days |= {leap - one, leap, leap + one}
    rate_days = sorted(rate_days)
    for day in rate_days:
        days |= {day - one, day, day + one}
    if rate_days:
        days |= {rate_days[0] - timedelta(days=400)}
    return sorted(days)


def days_near(today: date, rate_days: Iterable[date]) -> st.SearchStrategy[date]:
    return st.one_of(
        st.sampled_from(edge_days(today, rate_days)),
        st.dates(today - timedelta(days=6 * 366 + 30), today + timedelta(days=90)),
    )


@st.composite
def created_ats(draw: st.DrawFn, days: st.SearchStrategy[date]) -> tuple[str, date]:
    """A created_at near a UTC midnight, written in some offset; and its UTC date."""
    midnight = datetime.combine(draw(days), datetime.min.time(), UTC)
    shift = draw(
        st.one_of(
            st.sampled_from([0, 1, -1, 999, -1000, 1000, -999_999, 59_999_999]),
            st.integers(-4 * 3600 * 10**6, 4 * 3600 * 10**6),
        )
    )
    moment = midnight + timedelta(microseconds=shift)
    offset = draw(st.sampled_from(OFFSETS))
    local = moment.astimezone(timezone(offset))
    text = local.isoformat(
        sep=draw(st.sampled_from(["T", " "])),
        timespec=draw(st.sampled_from(["seconds", "milliseconds", "microseconds"])),
    )
    if offset == timedelta(0):
        # UTC written as Z, as +00:00, or with no offset at all (then UTC, SEMANTICS R3).
        text = text[: -len("+00:00")] + draw(st.sampled_from(["Z", "+00:00", ""]))
    elif draw(st.booleans()):
        text = text[:-3] + text[-2:]  # +05:30 as +0530
    return text, moment.date()


@st.composite
def entries(
    draw: st.DrawFn,
    *,
    initiatives: int,
    currencies: list[str | None],
    days: st.SearchStrategy[date],
    loaded_on: date,
    kind: str,
) -> Entry:
    period_start = draw(st.one_of(st.none(), days))
    created = draw(st.one_of(st.none(), created_ats(days)))
    created_at, created_on = (None, loaded_on) if created is None else created
    return Entry(
        initiative=draw(st.integers(0, initiatives - 1)),
        amount_cents=draw(amounts),
        currency=draw(st.sampled_from(currencies)),
        period_start=period_start,
        created_at=created_at,
        created_on=created_on,
        cost_category=draw(st.sampled_from(["capex", "opex"])) if kind == "cost" else None,
        status=draw(st.sampled_from([*STATUSES, "approved", "approved"]))
        if kind == "value"
        else None,
    )


@st.composite
def account_plans(draw: st.DrawFn, today: date, loaded_on: date) -> AccountPlan:
    currency = draw(st.sampled_from(CURRENCIES))
    others = draw(st.lists(st.sampled_from([c for c in CURRENCIES if c != currency]), unique=True))
    rate_day = st.dates(today - timedelta(days=5 * 366), today + timedelta(days=60))
    rates: dict[str, dict[date, str]] = {}
    for other in others:
        pairs = draw(st.lists(st.tuples(rate_day, rate_texts), min_size=1, max_size=3))
        rates[other] = dict(pairs)
    if draw(st.booleans()):
        # A rate given for the account currency itself: R5 says its rate is 1 regardless.
        rates[currency] = {draw(rate_day): draw(rate_texts)}
    later: list[tuple[str, date, str]] = []
    for other in others:
        known = sorted(rates[other])
        later += draw(
            st.lists(
                st.tuples(
                    st.just(other),
                    st.one_of(st.sampled_from(known), rate_day),  # a revision, or a new date
                    rate_texts,
                ),
                max_size=2,
                unique_by=lambda t: t[1],
            )
        )
    rate_days = [d for days in rates.values() for d in days] + [d for _, d, _ in later]
    days = days_near(today, rate_days)
    initiatives = draw(
        st.lists(st.tuples(st.booleans(), st.sampled_from(STAGES)), min_size=1, max_size=4).map(
            tuple
        )
    )
    spec = {
        "initiatives": len(initiatives),
        "currencies": [None, currency, *others],
        "days": days,
        "loaded_on": loaded_on,
    }
    return AccountPlan(
        currency=currency,
        rates=rates,
        later_rates=tuple(later),
        initiatives=initiatives,
        costs=tuple(draw(st.lists(entries(kind="cost", **spec), max_size=14))),
        values=tuple(draw(st.lists(entries(kind="value", **spec), max_size=14))),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    today = draw(st.sampled_from(TODAYS))
    # The load's own moment (the created_at of entries given none): near a midnight too.
    loaded_at = datetime.combine(today, datetime.min.time()) + timedelta(
        seconds=draw(st.sampled_from([-1, 0, 1, 3600]))
    )
    accounts = tuple(draw(st.lists(account_plans(today, loaded_at.date()), min_size=1, max_size=2)))
    # Bounds on, or a day off, the dates the entries are reported on, or anywhere near.
    one = timedelta(days=1)
    reported = {
        d
        for plan in accounts
        for e in (*plan.costs, *plan.values)
        for d in (
            expected_reported_on(e) - one,
            expected_reported_on(e),
            expected_reported_on(e) + one,
        )
    }
    days = days_near(today, [])
    if reported:
        days = st.one_of(st.sampled_from(sorted(reported)), days)
    low, high = draw(st.one_of(st.none(), days)), draw(st.one_of(st.none(), days))
    if low is not None and high is not None and low > high:
        low, high = high, low
    return Scenario(
        today=today,
        loaded_at=loaded_at,
        page_size=draw(st.sampled_from([2, 5, 500])),
        accounts=accounts,
        period=(low, high),
    )


def expected_reported_on(e: Entry) -> date:
    """SEMANTICS R2 from the bundle's own values."""
    return e.created_on if e.period_start is None else e.period_start


# --------------------------------------------------------------------------- loading


@dataclass
class Loaded:
    plan: AccountPlan
    account_id: int
    token: str
    initiatives: list[int] = field(default_factory=list)
    costs: dict[int, Entry] = field(default_factory=dict)  # by id
    values: dict[int, Entry] = field(default_factory=dict)


def load(engine: Engine, scenario: Scenario) -> list[Loaded]:
    b = BundleBuilder()
    loaded: list[Loaded] = []
    for n, plan in enumerate(scenario.accounts):
        acct = b.account(name=f"Acct{n}", currency=plan.currency)
        account = Loaded(plan=plan, account_id=acct, token=b.token(b.user(acct)))
        for currency, days in plan.rates.items():
            for day, rate in days.items():
                b.fx_rate(acct, currency, rate, day.isoformat())
        account.initiatives = [
            b.initiative(acct, title=f"Init {n}-{i}", stage=stage, is_sample=sample)
            for i, (sample, stage) in enumerate(plan.initiatives)
        ]
        for e in plan.costs:
            cost_id = b.cost_entry(
                account.initiatives[e.initiative],
                amount_cents=e.amount_cents,
                cost_category=e.cost_category,
                **common_fields(e),
            )
            account.costs[cost_id] = e
        for e in plan.values:
            value_id = b.value_entry(
                account.initiatives[e.initiative],
                amount_cents=e.amount_cents,
                status=e.status,
                **common_fields(e),
            )
            account.values[value_id] = e
        loaded.append(account)
    b.load(engine, now=scenario.loaded_at)
    # A later load that adds and revises rates: stored entries are converted again (R32).
    later = [
        {
            "account_id": account.account_id,
            "currency": currency,
            "rate": rate,
            "effective_from": day.isoformat(),
        }
        for account in loaded
        for currency, day, rate in account.plan.later_rates
    ]
    if later:
        load_bundle(engine, {"fx_rates": later}, now=scenario.loaded_at + timedelta(minutes=1))
    return loaded


def common_fields(e: Entry) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "currency": e.currency,
        "period_start": None if e.period_start is None else e.period_start.isoformat(),
    }
    if e.created_at is not None:
        fields["created_at"] = e.created_at
    return fields


# --------------------------------------------------------------------------- reading


def walk(client: Client, token: str, path: str, page_size: int, **params: Any) -> list[Row]:
    rows: list[Row] = []
    query: dict[str, Any] = {**params, "limit": page_size}
    while True:
        response = client.get(f"/api/v1/{path}", params=query, headers=bearer(token))
        assert response.status_code == 200, (path, query, response.text)
        body = response.json()
        rows += body["data"]
        if not body["page"]["has_more"]:
            return rows
        query["cursor"] = body["page"]["next_cursor"]


def check_rows(
    rows: list[Row], expected: dict[int, Entry], account: Loaded, kind: str, today: date
) -> None:
    """Every served row against R2 and R5 worked out here (and its loaded fields)."""
    plan, fx = account.plan, account.plan.fx()
    assert sorted(r["id"] for r in rows) == sorted(expected), kind
    for row in rows:
        e = expected[row["id"]]
        day = expected_reported_on(e)
        served = {
            "initiative_id": row["initiative_id"],
            "amount_cents": row["amount_cents"],
            "currency": row["currency"],
            "reported_on": row["reported_on"],
            "account_amount_cents": row["account_amount_cents"],
        }
        rules = {
            "initiative_id": account.initiatives[e.initiative],
            "amount_cents": e.amount_cents,
            "currency": e.currency,
            "reported_on": day.isoformat(),
            "account_amount_cents": account_amount(
                e.amount_cents, e.currency, day, plan.currency, fx
            ),
        }
        assert served == rules, (kind, row["id"], e, plan.currency, fx)
        note_case(e, day, today, plan, fx)
        if kind == "cost":
            assert row["cost_category"] == e.cost_category
        else:
            assert (row["status"], row["counts_toward_roi"]) == (e.status, e.status == "approved")


def note_case(
    e: Entry, day: date, today: date, plan: AccountPlan, fx: dict[str, dict[date, Decimal]]
) -> None:
    """Name the cases a run met (pytest --hypothesis-show-statistics lists them)."""
    if day in (today, today + timedelta(days=1)):
        event("reported on today or the day after")
    for window in WINDOW_YEARS:
        span = window_span(window, today)
        assert span is not None
        if day in (span[0] - timedelta(days=1), span[0]):
            event("reported on a window's first day or the day before")
    source = plan.currency if e.currency is None else e.currency
    if e.amount_cents is None:
        event("null amount")
    elif e.amount_cents < 0:
        event("refund")
    if source != plan.currency:
        event("converted")
        if day < min(fx[source]):
            event("dated before the earliest rate")
        exact = abs(e.amount_cents or 0) * Fraction(rate_on(fx, plan.currency, source, day))
        if exact.denominator == 2:
            event("half-cent tie")
        later = {(c, d) for c, d, _ in plan.later_rates}
        if any(c == source for c, _ in later):
            event("currency with rates from a later load")
    if e.period_start is None and e.created_at is not None:
        if e.created_at[:10] != e.created_on.isoformat():
            event("created_at written on another date than its UTC date")
        else:
            event("created_at from the bundle")
    if e.period_start is None and e.created_at is None:
        event("created_at from the load")
    if e.period_start is not None and e.period_start.month == 2 and e.period_start.day == 29:
        event("29 February")


def sums(costs: list[Row], values: list[Row], span: tuple[date, date] | None) -> dict[str, Any]:
    """/roi's figures as a consumer adds them up from its copy (SEMANTICS R9, R35)."""

    def total(rows: Iterable[Row]) -> int:
        return sum(
            r["account_amount_cents"]
            for r in rows
            if r["account_amount_cents"] is not None
            and within(date.fromisoformat(r["reported_on"]), span)
        )

    capex = total(r for r in costs if r["cost_category"] == "capex")
    opex = total(r for r in costs if r["cost_category"] == "opex")
    value = total(r for r in values if r["status"] == "approved")
    cost = capex + opex
    return {
        "approved_value_cents": value,
        "total_cost_cents": cost,
        "net_value_cents": value - cost,
        "roi": None if cost == 0 else float(Fraction(value - cost, cost)),
        "cost": {"capex_cents": capex, "opex_cents": opex},
    }


def check_account(client: Client, scenario: Scenario, account: Loaded) -> None:
    size, token, plan = scenario.page_size, account.token, account.plan
    initiatives = walk(client, token, "initiatives", size, include_sample="true")
    assert sorted(r["id"] for r in initiatives) == sorted(account.initiatives)
    sample = {r["id"]: r["is_sample"] for r in initiatives}
    titles = {r["id"]: r["title"] for r in initiatives}
    assert [sample[i] for i in account.initiatives] == [s for s, _ in plan.initiatives]
    if any(sample.values()):
        event("sample initiative")
    if plan.currency in plan.rates:
        event("a rate given for the account currency itself")

    costs = walk(client, token, "cost_entries", size)
    values = walk(client, token, "value_entries", size)
    check_rows(costs, account.costs, account, "cost", scenario.today)
    check_rows(values, account.values, account, "value", scenario.today)

    # 1. Every window and scope: the copy's sums are /roi's figures (R7, R8, R9, R35).
    portfolio = {i for i in account.initiatives if not sample[i]}  # R7
    scopes = [(None, portfolio)] + [(i, {i}) for i in account.initiatives]
    for window in ("all", "1yr", "3yr", "5yr"):
        span = window_span(window, scenario.today)
        for initiative_id, members in scopes:
            params: dict[str, Any] = {"window": window}
            if initiative_id is not None:
                params["initiative_id"] = initiative_id
            response = client.get("/api/v1/roi", params=params, headers=bearer(token))
            assert response.status_code == 200, response.text
            roi = response.json()
            copy = sums(
                [r for r in costs if r["initiative_id"] in members],
                [r for r in values if r["initiative_id"] in members],
                span,
            )
            served = {key: roi[key] for key in copy}
            assert served == copy, (window, initiative_id, plan.currency)
            assert roi["currency"] == plan.currency
            period = {"window": window, "label": WINDOW_LABELS[window]}
            if span is not None:
                period |= {"from": span[0].isoformat(), "through": span[1].isoformat()}
            assert roi["period"] == period
            if initiative_id is None:
                assert roi["scope"] == {"type": "portfolio"}
            else:
                assert roi["scope"] == {
                    "type": "initiative",
                    "id": initiative_id,
                    "title": titles[initiative_id],
                }

    # 3. The period filter keeps exactly the entries whose reported_on lies within (R11).
    low, high = scenario.period
    bounds = {
        name: day.isoformat()
        for name, day in (("period_from", low), ("period_to", high))
        if day is not None
    }
    for path, expected in (("cost_entries", account.costs), ("value_entries", account.values)):
        kept = walk(client, token, path, size, **bounds)
        want = sorted(
            i for i, e in expected.items() if within(expected_reported_on(e), (low, high))
        )
        assert sorted(r["id"] for r in kept) == want, (path, bounds)


@pytest.fixture
def client_on(db_url: str) -> Iterator[MakeClient]:
    """A client of the served app with `today` fixed (SEMANTICS R1), as AIROI_TODAY would:
    one app per day for the whole run of examples, without a rate limit."""
    from airoi.app import create_app
    from airoi.settings import Settings

    with ExitStack() as stack:

        @functools.cache
        def make(today: date) -> Client:
            app = create_app(Settings(database_url=db_url, today=today, rate_limit=UNLIMITED))
            stack.callback(app.state.engine.dispose)
            return stack.enter_context(TestClient(app))

        yield make


@settings(
    max_examples=30,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_entry_lists_reconcile_with_roi(
    engine: Engine, client_on: MakeClient, scenario: Scenario
) -> None:
    # SEMANTICS R35 (with R1, R2, R5-R9, R11): walked lists add up to /roi.
    _empty(engine)
    loaded = load(engine, scenario)
    client = client_on(scenario.today)
    for account in loaded:
        check_account(client, scenario, account)
