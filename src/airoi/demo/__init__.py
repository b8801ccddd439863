"""The demo account: a realistic AI-ROI portfolio, written as a bundle (BUNDLE.md).

`airoi demo` loads what `build_demo_bundle(today)` returns and issues a token for
`DEMO_OWNER_USER_ID`. The company is a fictional freight firm, Northwind Freight,
with a dozen AI initiatives in every stage, eighteen months of costs from several
vendors in USD and EUR, value in every review status, metrics with baselines and
readings, budgets that land in every budget status (SEMANTICS R16-R25), decisions of
every outcome and connections in every status.

The story is data: the TOML files in `data/`, read by `story`. The code builds rows
from it in the order of the data flow: `draft` (the rows, the calendar relative to
today, the ids), `portfolio` (account, people, vendors, initiatives, notes,
connections, assessments), `ledger` (cost and value entries), `measures` (metrics and
observations), `decisions` (budget versions and decisions), `bundle` (all of it, in
order). `loading` writes the bundle to a store.
"""

from __future__ import annotations

from airoi.demo.bundle import build_demo_bundle
from airoi.demo.ids import (
    DEMO_ACCOUNT_ID,
    DEMO_ACCOUNT_NAME,
    DEMO_OWNER_USER_ID,
    DEMO_SECRET_MARKER,
)
from airoi.demo.loading import DemoRefused, load_demo, reset_demo_account

__all__ = [
    "DEMO_ACCOUNT_ID",
    "DEMO_ACCOUNT_NAME",
    "DEMO_OWNER_USER_ID",
    "DEMO_SECRET_MARKER",
    "DemoRefused",
    "build_demo_bundle",
    "load_demo",
    "reset_demo_account",
]
