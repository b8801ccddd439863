"""The demo bundle (BUNDLE.md): the parts of the story built in order, as one dict."""

from __future__ import annotations

from datetime import date
from typing import Any

from airoi.demo.decisions import add_budgets, add_decisions
from airoi.demo.draft import Draft
from airoi.demo.ledger import add_costs, add_values
from airoi.demo.measures import add_metrics
from airoi.demo.portfolio import (
    add_assessments,
    add_company,
    add_connections,
    add_initiatives,
    add_notes,
)
from airoi.demo.story import story


def build_demo_bundle(today: date) -> dict[str, Any]:
    """The demo account as a bundle, every date relative to `today`.

    The order matters: ids are numbered and the seeded generator is drawn as entries
    are made, and a decision's figures are summed from the entries made before it.
    """
    draft = Draft(today, story())
    add_company(draft)
    add_initiatives(draft)
    add_notes(draft)
    add_costs(draft)
    add_values(draft)
    add_metrics(draft)
    add_budgets(draft)
    add_decisions(draft)
    add_connections(draft)
    add_assessments(draft)
    return dict(draft.rows)
