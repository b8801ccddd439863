"""The lists `airoi pull` copies, and the names of the walks whose positions a copy keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Resource:
    name: str
    key: str = "id"
    incremental: bool = True  # has updated_since; otherwise re-read whole and replaced
    params: dict[str, Any] = field(default_factory=dict)


# Sample (demo) initiatives are included so that every cost or value row has its initiative;
# the is_sample column tells them apart.
RESOURCES: tuple[Resource, ...] = (
    Resource("initiatives", params={"include_sample": True}),
    Resource("cost_entries"),
    Resource("value_entries"),
    Resource("metrics"),
    Resource("observations"),
    Resource("decisions"),
    Resource("integrations"),
    Resource("budgets", key="initiative_id", incremental=False, params={"include_sample": True}),
)

DELETIONS = "deletions"  # the walk of /deletions, remembered under this name

# The copy's account, remembered as a position only that account is served past: an
# initiatives cursor (SEMANTICS R13). Kept for a copy whose lists have none of their own
# (budgets alone, lists with no row), so that a pull with another account's token is refused
# there too (`airoi.client.pull._same_account`).
ACCOUNT = "_account"
ACCOUNT_LIST = "initiatives"

# The tables a tombstone can name (SEMANTICS R34): never a name taken from the response.
DELETABLE = frozenset(resource.name for resource in RESOURCES if resource.incremental)
