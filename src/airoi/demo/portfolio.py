"""The company and its portfolio: the account, people, EUR rates, vendors, initiatives,
notes, connections and assessments, as the data files describe them."""

from __future__ import annotations

from typing import Any

from airoi.demo.draft import Draft, Row
from airoi.demo.ids import DEMO_ACCOUNT_ID, DEMO_ACCOUNT_NAME, DEMO_SECRET_MARKER
from airoi.demo.story import StoryError


def add_company(draft: Draft) -> None:
    """The account, its people, its EUR rates (SEMANTICS R5) and its vendors."""
    company = draft.story["company"]
    account = company["account"]
    draft.rows["accounts"].append(
        {
            "id": DEMO_ACCOUNT_ID,
            "name": DEMO_ACCOUNT_NAME,
            "currency": account["currency"],
            "api_access": True,
            "fiscal_year_start_month": account["fiscal_year_start_month"],
            "approval_threshold_cents": account["approval_threshold_cents"],
            "internal": False,
        }
    )
    for person in company["people"]:
        draft.rows["users"].append(
            {
                "id": person["id"],
                "account_id": DEMO_ACCOUNT_ID,
                "name": person["name"],
                "email": f"{person['mailbox']}@northwind-freight.example",
                "role": person["role"],
                "removed_at": draft.moment(person.get("removed_at")),
            }
        )
    for rate in company["fx_rates"]:
        effective_from = draft.month(rate["month"])
        draft.fx.append((rate["currency"], effective_from, rate["rate"]))
        draft.rows["fx_rates"].append(
            {
                "account_id": DEMO_ACCOUNT_ID,
                "currency": rate["currency"],
                "rate": rate["rate"],
                "effective_from": effective_from.isoformat(),
            }
        )
    for vendor in company["vendors"]:
        merged_into = vendor.get("merged_into")
        draft.rows["vendors"].append(
            {
                "id": vendor["id"],
                "account_id": DEMO_ACCOUNT_ID,
                "name": vendor["name"],
                "merged_into_id": None if merged_into is None else draft.story.vendor(merged_into),
            }
        )


# An initiative's fields, in the bundle's order, and what a field left out is.
_INITIATIVE: dict[str, Any] = {
    "id": None,
    "account_id": DEMO_ACCOUNT_ID,
    "title": None,
    "description": None,
    "hypothesis": None,
    "stage": None,
    "is_sample": False,
    "category": None,
    "priority": None,
    "source": None,
    "business_unit": None,
    "department": None,
    "gl_dimension_value": None,
    "owner_id": None,
    "confidence_score": None,
    "roi_time_horizon_years": None,
    "currency": None,
    "expected_capex_cents": None,
    "expected_opex_cents": None,
    "expected_cost_savings_cents": None,
    "expected_revenue_uplift_cents": None,
    "started_at": None,
    "went_live_at": None,
    "approved_at": None,
    "closed_at": None,
    "submitted_for_review_at": None,
    "created_at": None,
    "updated_at": None,
}


def add_initiatives(draft: Draft) -> None:
    """The initiatives; one without updated_at was last changed at its latest moment."""
    for record in draft.story["initiatives"]["initiatives"]:
        row: Row = {**_INITIATIVE, "currency": draft.story.currency}
        for name, value in record.items():
            if name == "key":
                continue
            if name == "owner":
                row["owner_id"] = draft.story.person(value)
            elif name not in row:
                raise StoryError(f"initiatives.toml: not an initiative field: {name!r}")
            elif name.endswith("_at"):
                row[name] = draft.moment(value)
            else:
                row[name] = value
        if row["updated_at"] is None:
            stamps = [row[name] for name in row if name.endswith("_at") and row[name]]
            row["updated_at"] = max(stamps)
        draft.rows["initiatives"].append(row)


def add_notes(draft: Draft) -> None:
    for note in draft.story["initiatives"]["notes"]:
        draft.rows["initiative_notes"].append(
            {
                "id": draft.take_id("initiative_notes"),
                "initiative_id": draft.story.initiative(note["initiative"]),
                "author_id": draft.story.person(note["author"]),
                "body": note["body"],
                "created_at": draft.at(note["month"], note["day"], 15, 10),
            }
        )


def _marked(value: Any) -> Any:
    """`{marker}` in every string replaced by the demo's secret marker."""
    if isinstance(value, str):
        return value.replace("{marker}", DEMO_SECRET_MARKER)
    if isinstance(value, list):
        return [_marked(item) for item in value]
    if isinstance(value, dict):
        return {key: _marked(item) for key, item in value.items()}
    return value


def add_connections(draft: Draft) -> None:
    """The connections; one was last changed at the latest of its moments."""
    for record in draft.story["connections"]["connections"]:
        created = draft.at(*record["created"])
        last_synced_at = draft.moment(record.get("last_synced_at"))
        reauth_required_at = draft.moment(record.get("reauth_required_at"))
        updated = max(created, last_synced_at or created, reauth_required_at or created)
        draft.rows["integrations"].append(
            {
                "id": record["id"],
                "platform": record["platform"],
                "name": record["name"],
                "description": record["description"],
                "status": record["status"],
                "auth_type": record["auth_type"],
                "last_sync_status": record["last_sync_status"],
                "last_synced_at": last_synced_at,
                "reauth_required_at": reauth_required_at,
                "external_account_id": record["external_account_id"],
                "external_account_name": record["external_account_name"],
                "primary_source_categories": record["primary_source_categories"],
                "metric_categories": record["metric_categories"],
                "connected_by_id": draft.story.person(record["connected_by"]),
                "credentials": _marked(record["credentials"]),
                "settings": _marked(record["settings"]),
                "last_error": _marked(record.get("last_error")),
                "account_id": DEMO_ACCOUNT_ID,
                "simulated": False,
                "created_at": created,
                "updated_at": updated,
            }
        )


def add_assessments(draft: Draft) -> None:
    """The assessments; `{year}` in a title is the year of the month it was created in."""
    for record in draft.story["company"]["assessments"]:
        created = record["created_at"]
        draft.rows["assessments"].append(
            {
                "id": record["id"],
                "account_id": DEMO_ACCOUNT_ID,
                "title": record["title"].replace("{year}", str(draft.month(created[0]).year)),
                "status": record["status"],
                "created_at": draft.moment(created),
            }
        )
