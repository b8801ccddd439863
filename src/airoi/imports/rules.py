"""The rules file (IMPORT.md): TOML, read with the standard library's `tomllib`.

    amount = "EffectiveCost"     # FOCUS only
    cost_type = "infrastructure"
    [[map]]
    initiative_id = 101
    where = { "Tags.application" = "support-bot", ServiceCategory = "AI and Machine Learning" }

Rules are tried in order; the first whose every `where` pair matches takes the row. A value
matches by exact, case-sensitive string equality; a list matches any of its values; an empty
`where` matches every row.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from airoi.imports.problems import ImportRefused

FOCUS_AMOUNTS: Final = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")
COST_CATEGORIES: Final = ("capex", "opex")
TOP_KEYS: Final = frozenset({"amount", "cost_type", "map"})
RULE_KEYS: Final = frozenset(
    {"initiative_id", "where", "cost_type", "vendor_name", "cost_category"}
)
MAX_RULES_BYTES: Final = 1 << 20
MAX_RULES: Final = 10_000
MAX_TEXT: Final = 300  # a vendor name's column; cost types are shorter still


@dataclass(frozen=True)
class Rule:
    number: int  # 1-based, as `map[N]` in problem lines
    initiative_id: int
    where: tuple[tuple[str, frozenset[str]], ...]
    cost_type: str | None
    vendor_name: str | None
    cost_category: str | None


@dataclass(frozen=True)
class Rules:
    path: Path
    amount: str | None  # FOCUS's amount column, None when not given
    cost_type: str | None  # None: the source's default
    map: tuple[Rule, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field a rule's `where` names, once each, in order of first use."""
        seen: dict[str, None] = {}
        for rule in self.map:
            for name, _ in rule.where:
                seen.setdefault(name, None)
        return tuple(seen)

    def matcher(self) -> Callable[[Sequence[str | None]], Rule | None]:
        """A function of the values of `fields` (in that order) to the rule taking them."""
        position = {name: index for index, name in enumerate(self.fields)}
        compiled = [
            (rule, tuple((position[name], values) for name, values in rule.where))
            for rule in self.map
        ]

        def match(values: Sequence[str | None]) -> Rule | None:
            for rule, tests in compiled:
                if all(values[index] in allowed for index, allowed in tests):
                    return rule
            return None

        return match


def _refuse(path: Path, where: str, message: str) -> ImportRefused:
    return ImportRefused([f"{path.name}: {where}: {message}"])


def _value_set(path: Path, where: str, value: Any) -> frozenset[str]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _refuse(path, where, "an empty list matches nothing; leave the key out instead")
    out: set[str] = set()
    for item in values:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise _refuse(path, where, "must be a string, or a list of strings")
        out.add(str(item))
    return frozenset(out)


def _optional_text(path: Path, where: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise _refuse(path, where, f"must be a non-empty string of at most {MAX_TEXT} characters")
    return value


def read_rules(path: Path, *, allowed_fields: Callable[[str], bool], focus: bool) -> Rules:
    """The rules at `path`, every key checked; `allowed_fields` says which `where` keys the
    source has (FOCUS: any column, checked against the file's header later)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportRefused([f"{path.name}: cannot be read ({exc.strerror or exc})"]) from None
    if len(raw) > MAX_RULES_BYTES:
        raise ImportRefused([f"{path.name}: larger than {MAX_RULES_BYTES:,} bytes"])
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ImportRefused([f"{path.name}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ImportRefused([f"{path.name}: not valid TOML ({exc})"]) from None
    for key in data:
        if key not in TOP_KEYS:
            raise _refuse(path, key, "unknown key (amount, cost_type and map are known)")
    amount = data.get("amount")
    if amount is not None:
        if not focus:
            raise _refuse(path, "amount", "only a FOCUS import chooses its amount column")
        if amount not in FOCUS_AMOUNTS:
            raise _refuse(path, "amount", f"must be one of {', '.join(FOCUS_AMOUNTS)}")
    cost_type = _optional_text(path, "cost_type", data.get("cost_type"))
    rules = data.get("map")
    if not isinstance(rules, list) or not rules:
        raise _refuse(path, "map", "required: at least one [[map]] rule")
    if len(rules) > MAX_RULES:
        raise _refuse(path, "map", f"more than {MAX_RULES:,} rules")
    made: list[Rule] = []
    for number, rule in enumerate(rules, start=1):
        here = f"map[{number}]"
        if not isinstance(rule, dict):
            raise _refuse(path, here, "must be a table ([[map]])")
        for key in rule:
            if key not in RULE_KEYS:
                raise _refuse(path, f"{here}.{key}", "unknown key")
        initiative_id = rule.get("initiative_id")
        if isinstance(initiative_id, bool) or not isinstance(initiative_id, int):
            raise _refuse(path, f"{here}.initiative_id", "required: the id of an initiative")
        if not 0 < initiative_id < 2**63:
            raise _refuse(path, f"{here}.initiative_id", "must be a positive id")
        where = rule.get("where", {})
        if not isinstance(where, dict):
            raise _refuse(path, f"{here}.where", "must be a table of field = value pairs")
        pairs = []
        for name, value in where.items():
            if not allowed_fields(name):
                raise _refuse(path, f"{here}.where.{name}", "not a field of this source")
            pairs.append((name, _value_set(path, f"{here}.where.{name}", value)))
        category = rule.get("cost_category")
        if category is not None and category not in COST_CATEGORIES:
            raise _refuse(path, f"{here}.cost_category", "must be capex or opex")
        made.append(
            Rule(
                number=number,
                initiative_id=initiative_id,
                where=tuple(pairs),
                cost_type=_optional_text(path, f"{here}.cost_type", rule.get("cost_type")),
                vendor_name=_optional_text(path, f"{here}.vendor_name", rule.get("vendor_name")),
                cost_category=category,
            )
        )
    return Rules(path=path, amount=amount, cost_type=cost_type, map=tuple(made))
