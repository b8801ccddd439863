"""Every amount the service serves fits a signed 64-bit integer (SEMANTICS R38).

A bundle that could make a served figure pass 2**63 - 1 (a sum /roi serves, a budget row
in its own currency) is refused naming the account or the initiative, and nothing is
written, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select

from airoi.db.tables import metadata
from airoi.load import BundleError, load_bundle

MAX = 2**63 - 1


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {
            t.name: sorted((tuple(r) for r in conn.execute(select(t))), key=repr)
            for t in metadata.sorted_tables
        }


def account(**initiative: Any) -> dict[str, Any]:
    return {
        "accounts": [{"id": 1, "name": "Acme", "currency": "USD"}],
        "users": [{"id": 1, "account_id": 1, "name": "Ada", "role": "owner"}],
        "initiatives": [{"id": 5, "account_id": 1, "title": "Bot", "stage": "live", **initiative}],
    }


def entries(*amounts: int, first_id: int = 100, **fields: Any) -> list[dict[str, Any]]:
    return [
        {"id": first_id + n, "initiative_id": 5, "amount_cents": amount, **fields}
        for n, amount in enumerate(amounts)
    ]


def refused(engine: Engine, bundle: dict[str, Any]) -> list[str]:
    before = snapshot(engine)
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle)
    assert snapshot(engine) == before
    return caught.value.problems


def test_an_account_whose_sums_could_pass_64_bits_is_refused(engine: Engine) -> None:
    # Three entries of 2**62: /roi's cost would be 3 * 2**62 > 2**63 - 1.
    problems = refused(engine, {**account(), "cost_entries": entries(2**62, 2**62, 2**62)})
    assert problems == [
        "accounts[id=1]: the sum of its cost and value entries in the account currency (what "
        f"/roi adds) could pass {MAX:,} cents, more than a 64-bit integer holds (SEMANTICS R38)"
    ]


def test_refunds_do_not_make_room_for_a_window_without_them(engine: Engine) -> None:
    # 2**62 + 2**62 - 2**62 fits, but a window holding the first two only would not.
    problems = refused(engine, {**account(), "cost_entries": entries(2**62, 2**62, -(2**62))})
    assert problems[0].startswith("accounts[id=1]: the sum of its cost and value entries")


def test_value_and_cost_together_are_bounded_as_net_value_is(engine: Engine) -> None:
    # net = value - cost: 2**62 of approved value and -2**62 of cost (a refund) is 2**63.
    bundle = {
        **account(),
        "cost_entries": entries(-(2**62)),
        "value_entries": entries(2**62, first_id=200, status="approved"),
    }
    assert refused(engine, bundle)[0].startswith("accounts[id=1]")


def test_sums_that_fit_load_and_a_later_load_is_refused_alone(engine: Engine) -> None:
    # Σ|amount| = 2**63 - 1 exactly: the largest that fits.
    report = load_bundle(engine, {**account(), "cost_entries": entries(2**62, 2**62 - 1)})
    assert report.inserted["cost_entries"] == 2
    problems = refused(engine, {"cost_entries": entries(1, first_id=300)})
    assert problems[0].startswith("accounts[id=1]")


def test_a_budget_row_in_another_currency_is_bounded_in_its_currency(engine: Engine) -> None:
    # SEMANTICS R4: the row of a JPY initiative is in JPY. 10**17 USD cents at 0.0066 USD per
    # JPY is about 1.5 * 10**19 JPY cents, past 2**63 - 1 (9.2 * 10**18), though the account's
    # USD sum fits.
    bundle = {
        **account(currency="JPY"),
        "fx_rates": [
            {"account_id": 1, "currency": "JPY", "rate": "0.0066", "effective_from": "2020-01-01"}
        ],
        "cost_entries": entries(10**17),
    }
    assert refused(engine, bundle) == [
        "initiatives[id=5]: a figure of its budget row in JPY (its cost entries in JPY, with its "
        "budget versions' capex and monthly opex through 9999-12) could pass "
        f"{MAX:,} cents, more than a 64-bit integer holds (SEMANTICS R38)"
    ]
    # A tenth of it fits (1.5 * 10**18 JPY cents).
    bundle["cost_entries"] = entries(10**16)
    assert load_bundle(engine, bundle).inserted["cost_entries"] == 1


def test_a_budget_whose_opex_to_date_could_pass_64_bits_is_refused(engine: Engine) -> None:
    # 10**14 cents a month from January 2020 through December 9999 (95,760 months, and a
    # fiscal year more) is about 9.6 * 10**18: a day late enough would serve it.
    version = {
        "id": 41,
        "initiative_id": 5,
        "effective_from": "2020-01-01",
        "status": "approved",
        "opex_cents": 10**14,
    }
    problems = refused(engine, {**account(), "budget_versions": [version]})
    assert problems[0].startswith("initiatives[id=5]: a figure of its budget row in USD")
    version["opex_cents"] = 10**13
    assert (
        load_bundle(engine, {**account(), "budget_versions": [version]}).inserted["budget_versions"]
        == 1
    )


def test_a_budgeted_rows_projection_is_bounded(engine: Engine) -> None:
    # SEMANTICS R46, R38: a budgeted row projects its fiscal year's opex so far plus its run
    # rate for up to 11 more months, so 12 times its spend: 10**18 of opex could be projected
    # as 1.2 * 10**19, past 2**63 - 1 (9.2 * 10**18), though the spend alone fits.
    version = {
        "id": 41,
        "initiative_id": 5,
        "effective_from": "2020-01-01",
        "status": "approved",
        "opex_cents": 1,
    }
    bundle = {**account(), "budget_versions": [version], "cost_entries": entries(10**18)}
    problems = refused(engine, bundle)
    assert problems[0].startswith("initiatives[id=5]: a figure of its budget row in USD")
    # 7 * 10**17 projects to at most 8.4 * 10**18 and loads (a row with no budget version
    # has no projection: its spend alone is bounded, as the test above with 2**63 - 1 shows).
    bundle["cost_entries"] = entries(7 * 10**17)
    assert load_bundle(engine, bundle).inserted["cost_entries"] == 1


def _business_case_refusal(currency: str) -> str:
    return (
        f"initiatives[id=5]: a figure of its business case in {currency} (its expected_* "
        "amounts together, or its cost and value entries together) could pass "
        f"{MAX:,} cents, more than a 64-bit integer holds (SEMANTICS R38)"
    )


def test_a_business_case_whose_planned_cost_could_pass_64_bits_is_refused(
    engine: Engine,
) -> None:
    # SEMANTICS R38, R43: planned cost = capex + opex = 2**62 + 2**62 = 2**63.
    bundle = account(expected_capex_cents=2**62, expected_opex_cents=2**62)
    assert refused(engine, bundle) == [_business_case_refusal("USD")]
    # 2**62 + 2**62 - 1 = 2**63 - 1 fits; so does any planned net made of the same amounts.
    bundle = account(expected_capex_cents=2**62, expected_opex_cents=2**62 - 1)
    assert load_bundle(engine, bundle).inserted["initiatives"] == 1


def test_a_business_cases_actuals_are_bounded_in_its_currency(engine: Engine) -> None:
    # SEMANTICS R38, R44: in JPY at 0.0066 USD per JPY, 6 * 10**16 USD cents of value is
    # 9.09 * 10**18 JPY cents and 10**15 of cost 1.5 * 10**17: each fits, but net value to
    # date spans both, 9.24 * 10**18 > 2**63 - 1 (9.22 * 10**18). The account's USD sums and
    # the budget row (cost alone) fit.
    fx = [{"account_id": 1, "currency": "JPY", "rate": "0.0066", "effective_from": "2020-01-01"}]
    value = entries(6 * 10**16, first_id=200, status="approved")
    bundle = {
        **account(currency="JPY"),
        "fx_rates": fx,
        "cost_entries": entries(10**15),
        "value_entries": value,
    }
    assert refused(engine, bundle) == [_business_case_refusal("JPY")]
    bundle = {**account(currency="JPY"), "fx_rates": fx, "value_entries": value}
    assert load_bundle(engine, bundle).inserted["value_entries"] == 1
