"""What a load ends in: its report, or why nothing was written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


class BundleError(Exception):
    """A bundle that cannot be loaded; `problems` holds one line per problem. `keyed` gives
    the ids pass 1 gave the records matched by their source ref (SEMANTICS R42), by kind and
    position, so a caller can say which of its rows a problem naming such an id is."""

    def __init__(self, problems: list[str], keyed: dict[str, dict[int, int]] | None = None) -> None:
        self.problems = list(problems)
        self.keyed = keyed or {}
        super().__init__("\n".join(self.problems))


class LoadBusy(Exception):
    """Another load held the store past the wait allowed (SEMANTICS R32); nothing written."""


@dataclass
class LoadReport:
    """Rows inserted, updated, unchanged and deleted, keyed by bundle key; the moment the
    load stamped what it changed (SEMANTICS R32), and how many `updated_at` values the
    bundle gave that were ignored for it."""

    inserted: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    stamp: datetime | None = None
    ignored_stamps: int = 0

    def totals(self) -> dict[str, int]:
        return {
            "inserted": sum(self.inserted.values()),
            "updated": sum(self.updated.values()),
            "unchanged": sum(self.unchanged.values()),
            "deleted": sum(self.deleted.values()),
        }
