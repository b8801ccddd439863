"""The demo's story as data: the TOML files in `data/`, read once and checked for references.

Each file holds one part of the story (company.toml: the account, people, vendors, EUR
rates and assessments; initiatives.toml; costs.toml; values.toml; metrics.toml;
budgets.toml; decisions.toml; connections.toml), with comments saying which rule each
unusual record exercises. Records refer to each other by key ("triage", "maya"); the
Story turns a key into its id. The files ship with the package and are read through
importlib.resources, so the demo works from a wheel as from a source tree. A file that
does not parse, or a key that names nothing, raises StoryError naming the file: the data
ships with the code, so a mistake in it is a bug to fail loudly on.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from airoi.demo.ids import DEMO_OWNER_USER_ID

_FILES = (
    "company",
    "initiatives",
    "costs",
    "values",
    "metrics",
    "budgets",
    "decisions",
    "connections",
)


class StoryError(Exception):
    """A data file of the demo is malformed; the message names the file."""


@dataclass(frozen=True)
class Story:
    """The parsed files, by file name without `.toml`, and the ids of keyed records."""

    files: dict[str, dict[str, Any]]
    ids: dict[str, dict[str, int]]  # kind ("people", "vendors"...) -> key -> id

    def __getitem__(self, name: str) -> dict[str, Any]:
        return self.files[name]

    @property
    def currency(self) -> str:
        currency: str = self.files["company"]["account"]["currency"]
        return currency

    def id_of(self, kind: str, key: str) -> int:
        try:
            return self.ids[kind][key]
        except KeyError:
            raise StoryError(f"the demo's data names no {kind} {key!r}") from None

    def person(self, key: str) -> int:
        return self.id_of("people", key)

    def initiative(self, key: str) -> int:
        return self.id_of("initiatives", key)

    def vendor(self, key: str) -> int:
        return self.id_of("vendors", key)

    def metric(self, key: str) -> int:
        return self.id_of("metrics", key)

    def connection(self, key: str | None) -> int | None:
        return None if key is None else self.id_of("connections", key)

    def invoiced_as(self, name: str) -> tuple[int, str, int | None, int | None]:
        """A vendor as named on invoices: (vendor id, currency, connection id, the month
        from which its usage arrives by import instead of through the connection)."""
        try:
            entry = self.files["costs"]["invoiced_as"][name]
        except KeyError:
            raise StoryError(f"costs.toml: no invoiced_as entry for {name!r}") from None
        return (
            self.vendor(entry["vendor"]),
            entry["currency"],
            self.connection(entry.get("connection")),
            entry.get("connection_ended"),
        )


def _read(name: str) -> dict[str, Any]:
    text = files("airoi.demo").joinpath("data", f"{name}.toml").read_text(encoding="utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StoryError(f"{name}.toml: not valid TOML ({exc})") from exc


def _keyed(name: str, records: list[dict[str, Any]]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for record in records:
        key, record_id = record.get("key"), record.get("id")
        if not isinstance(key, str) or not isinstance(record_id, int) or key in ids:
            raise StoryError(f"{name}.toml: each record needs a unique key and an id: {record}")
        ids[key] = record_id
    return ids


@cache
def story() -> Story:
    """The demo's data files, parsed; the same object on every call."""
    parsed = {name: _read(name) for name in _FILES}
    ids = {
        "people": _keyed("company", parsed["company"]["people"]),
        "vendors": _keyed("company", parsed["company"]["vendors"]),
        "initiatives": _keyed("initiatives", parsed["initiatives"]["initiatives"]),
        "connections": _keyed("connections", parsed["connections"]["connections"]),
        "metrics": _keyed("metrics", parsed["metrics"]["metrics"]),
    }
    owners = [p["id"] for p in parsed["company"]["people"] if p.get("role") == "owner"]
    if owners != [DEMO_OWNER_USER_ID]:
        raise StoryError(f"company.toml: the one owner must have id {DEMO_OWNER_USER_ID}")
    return Story(files=parsed, ids=ids)
