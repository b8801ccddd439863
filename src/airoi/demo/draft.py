"""The demo bundle while it is built: its rows, its calendar relative to today, its ids.

Every date is an offset from `today` in whole months, and amounts vary only through a
generator seeded with a fixed constant, so one `today` always gives the same bundle and
refreshing the demo on a later day moves the whole story forward.
"""

from __future__ import annotations

import calendar
import random
from datetime import date, datetime, time, timedelta
from typing import Any

from airoi.demo.ids import FIRST_IDS
from airoi.demo.story import Story, StoryError
from airoi.timeutil import format_datetime

Row = dict[str, Any]

_SEED = 20_240_917

# The bundle's lists, in the order BUNDLE.md gives them.
KEYS = (
    "accounts",
    "users",
    "fx_rates",
    "vendors",
    "initiatives",
    "initiative_notes",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budget_versions",
    "decisions",
    "integrations",
    "assessments",
)


def _first_of_month(year: int, month_index: int) -> date:
    index = year * 12 + month_index
    return date(index // 12, index % 12 + 1, 1)


class Draft:
    """The rows built so far, with what every part of the build shares."""

    def __init__(self, today: date, story: Story) -> None:
        self.today = today
        self.story = story
        self.rng = random.Random(_SEED)
        self.rows: dict[str, list[Row]] = {key: [] for key in KEYS}
        self.next_id = dict(FIRST_IDS)
        self.fx: list[tuple[str, date, str]] = []

    # Dates -------------------------------------------------------------------

    def month(self, offset: int) -> date:
        """First day of the month `offset` months from today's (0 is this month)."""
        return _first_of_month(self.today.year, self.today.month - 1 + offset)

    def month_end(self, offset: int) -> date:
        return self.month(offset + 1) - timedelta(days=1)

    def day(self, offset: int, day: int) -> date:
        """Day `day` of month `offset`, never after yesterday."""
        first = self.month(offset)
        last_day = calendar.monthrange(first.year, first.month)[1]
        return min(first.replace(day=min(day, last_day)), self.today - timedelta(days=1))

    def at(self, offset: int, day: int, hour: int = 9, minute: int = 0, ms: int = 0) -> str:
        """A datetime string on day `day` of month `offset`, never after yesterday."""
        moment = datetime.combine(self.day(offset, day), time(hour, minute, 0, ms % 1000 * 1000))
        return format_datetime(moment)

    def on(self, day: date, hour: int = 9, minute: int = 0) -> str:
        return format_datetime(datetime.combine(day, time(hour, minute)))

    def moment(self, spec: list[int] | dict[str, int] | None) -> str | None:
        """A moment as the data files write it: [month, day, hour, minute] (hour and
        minute optional) or {days_ago, hour, minute}; None stays None."""
        if spec is None:
            return None
        if isinstance(spec, list) and 2 <= len(spec) <= 4:
            return self.at(*spec)
        if isinstance(spec, dict) and set(spec) == {"days_ago", "hour", "minute"}:
            day = self.today - timedelta(days=spec["days_ago"])
            return self.on(day, spec["hour"], spec["minute"])
        raise StoryError(f"the demo's data has a moment it cannot read: {spec!r}")

    # Ids ---------------------------------------------------------------------

    def take_id(self, key: str) -> int:
        value = self.next_id[key]
        self.next_id[key] += 1
        return value
