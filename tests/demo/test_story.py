"""The demo's story as data files: read from the package, every record used, mistakes refused.

What the bundle promises is pinned by test_demo.py; these tests pin the reading of the
files under src/airoi/demo/data/ that the bundle is built from.
"""

from __future__ import annotations

import copy
import json
import tomllib
from datetime import date
from pathlib import Path

import pytest

from airoi.demo import build_demo_bundle
from airoi.demo.draft import Draft
from airoi.demo.portfolio import add_initiatives
from airoi.demo.story import Story, StoryError, story

TODAY = date(2026, 3, 17)
ROOT = Path(__file__).resolve().parents[2]


def test_every_keyed_record_of_the_files_is_in_the_bundle() -> None:
    bundle = build_demo_bundle(TODAY)
    files = story().files
    listed = {
        "users": files["company"]["people"],
        "vendors": files["company"]["vendors"],
        "initiatives": files["initiatives"]["initiatives"],
        "metrics": files["metrics"]["metrics"],
        "integrations": files["connections"]["connections"],
        "assessments": files["company"]["assessments"],
    }
    for kind, records in listed.items():
        assert sorted(r["id"] for r in records) == sorted(r["id"] for r in bundle[kind]), kind
    counted = {
        "initiative_notes": files["initiatives"]["notes"],
        "budget_versions": files["budgets"]["budgets"],
        "decisions": files["decisions"]["decisions"],
        "fx_rates": files["company"]["fx_rates"],
    }
    for kind, records in counted.items():
        assert len(bundle[kind]) == len(records), kind


def test_no_placeholder_of_the_files_is_left_in_the_bundle() -> None:
    text = json.dumps(build_demo_bundle(TODAY), ensure_ascii=False)
    for placeholder in ("{marker}", "{year}", "{seats}", "{month}"):
        assert placeholder not in text


def test_a_wrapped_string_keeps_its_spaces() -> None:
    # TOML drops the whitespace after a line-ending backslash, so a line of a wrapped
    # string must end with its space, not start the next line with it.
    initiatives = {i["id"]: i for i in build_demo_bundle(TODAY)["initiatives"]}
    assert initiatives[900_303]["hypothesis"] == (
        "Faster, more specific follow-ups raise the outbound reply rate from 3% to 5% and "
        "add $400k of won freight revenue a year."
    )


def test_copilot_seats_grow_from_85_to_140() -> None:
    seats = [
        entry
        for entry in build_demo_bundle(TODAY)["cost_entries"]
        if entry["description"].startswith("GitHub Copilot Business, ")
    ]
    # 18 months (17 months back through this one), at $19 a seat.
    assert len(seats) == 18
    first = min(seats, key=lambda e: e["period_start"])
    last = max(seats, key=lambda e: e["period_start"])
    assert (first["period_start"], first["description"]) == (
        "2024-10-01",
        "GitHub Copilot Business, 85 seats",
    )
    assert first["amount_cents"] == 161_500  # 85 x 1,900
    assert (last["period_start"], last["description"]) == (
        "2026-03-01",
        "GitHub Copilot Business, 140 seats",
    )
    assert last["amount_cents"] == 266_000  # 140 x 1,900
    assert last["source"]["ref"] == "copilot-billing:2026-03"


def test_moments_read_as_the_files_write_them() -> None:
    draft = Draft(TODAY, story())
    # [month, day, hour, minute]; February 2026 has 28 days.
    assert draft.moment([-1, 31, 16, 45]) == "2026-02-28T16:45:00.000Z"
    assert draft.moment([-13, 9]) == "2025-02-09T09:00:00.000Z"
    # Never later than yesterday.
    assert draft.moment([0, 20, 8]) == "2026-03-16T08:00:00.000Z"
    assert draft.moment({"days_ago": 4, "hour": 4, "minute": 0}) == "2026-03-13T04:00:00.000Z"
    assert draft.moment(None) is None


@pytest.mark.parametrize("spec", [[-1], [-1, 2, 3, 4, 5], {"days": 1}, "2026-03-01"])
def test_a_moment_it_cannot_read_is_refused(spec: object) -> None:
    draft = Draft(TODAY, story())
    with pytest.raises(StoryError, match="moment"):
        draft.moment(spec)  # type: ignore[arg-type]


def test_a_key_that_names_nothing_is_refused() -> None:
    with pytest.raises(StoryError, match="initiatives 'no_such_initiative'"):
        story().initiative("no_such_initiative")
    with pytest.raises(StoryError, match="'Acme AI'"):
        story().invoiced_as("Acme AI")


def test_an_unknown_initiative_field_is_refused() -> None:
    files = copy.deepcopy(story().files)
    files["initiatives"]["initiatives"][0]["colour"] = "blue"
    draft = Draft(TODAY, Story(files=files, ids=story().ids))
    with pytest.raises(StoryError, match="'colour'"):
        add_initiatives(draft)
    assert draft.rows["initiatives"] == []


def test_the_data_files_ship_with_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["airoi"]
    assert "demo/data/*.toml" in shipped
    data = ROOT / "src" / "airoi" / "demo" / "data"
    names = sorted(path.name for path in data.iterdir())
    # Every file is TOML (so the pattern ships it), and every one is read.
    assert names == sorted(f"{name}.toml" for name in story().files)
