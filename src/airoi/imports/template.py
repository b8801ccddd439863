"""The header row of a table of KIND's records (`airoi import table KIND --template`): the
bundle's field names, the source object as `source_type`, `source_ref`,
`source_connection_id`; stamps and derived fields left out (the store keeps those)."""

from __future__ import annotations

from typing import Final

from airoi.load.kinds import KINDS

TABLE_KINDS: Final = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budget_versions",
)
LEFT_OUT: Final = frozenset({"created_at", "updated_at"})


def columns(kind: str) -> list[str]:
    spec = KINDS[kind]
    names = [name for name in spec.fields if name not in LEFT_OUT]
    if spec.account in ("initiative", "observation") and "account_id" not in names:
        names.insert(1, "account_id")
    return names


def header_row(kind: str) -> str:
    return ",".join(columns(kind))
