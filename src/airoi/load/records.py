"""One record at a time: its label in problem lines, and its fields converted.

A record keeps only the fields it gives (SEMANTICS R33): a field left out keeps the
stored value, one given as null clears it, and a new row's absent fields take their
defaults. Which of these applies is known only once the store is asked whether the row
exists, so merging (`merged`) and the required-field check (`missing_required`) come
later, in the checks and the writer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from airoi.load.kinds import SOURCE_PARTS, Kind
from airoi.load.outcome import BundleError
from airoi.load.values import (
    MAX_ID,
    Bad,
    conv_currency,
    conv_date,
    conv_id,
    person_id,
    show,
    too_late_to_keep,
)

MAX_PROBLEMS: Final = 1000  # lines kept; the rest are counted in one last line
MAX_COUNTED: Final = 1_000_000  # past this many more, the count stops (and says so)
MAX_SHOWN_NAME: Final = 60  # a field or key name longer than this is cut in a problem line


def shown_name(name: str) -> str:
    """A name a bundle gave, as a problem line shows it: cut when long (a name can be a
    megabyte of text)."""
    return name if len(name) <= MAX_SHOWN_NAME else name[: MAX_SHOWN_NAME - 3] + "..."


class Problems:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.more = 0
        self.stopped = False  # counting stopped at MAX_COUNTED more

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_PROBLEMS:
            self.lines.append(line)
        elif self.more < MAX_COUNTED:
            self.more += 1
        else:
            self.stopped = True

    def __bool__(self) -> bool:
        return bool(self.lines)

    def error(self) -> BundleError:
        lines = list(self.lines)
        if self.stopped:
            lines.append(
                f"bundle: {self.more:,} or more problems not listed (counting stopped there)"
            )
        elif self.more:
            lines.append(f"bundle: {self.more} more problems not listed")
        return BundleError(lines)


class Rec:
    """One record: its label, the columns it gives (`row`, merged with the stored row once
    that is known), the names of those it gave (`given`) and of those it gave a value
    refused (`failed`, each named in a problem already)."""

    __slots__ = ("account", "failed", "given", "given_account", "label", "row", "stamp_ignored")

    def __init__(
        self,
        label: str,
        row: dict[str, Any],
        given_account: int | None,
        failed: frozenset[str] = frozenset(),
    ) -> None:
        self.label = label
        self.row = row
        self.given: frozenset[str] = frozenset(row)
        self.failed = failed
        self.given_account = given_account
        self.account: int | None = None
        self.stamp_ignored = False  # it gave an updated_at, dropped (SEMANTICS R32)


def label_of(kind: Kind, raw: dict[str, Any], pos: int) -> str:
    key = kind.key
    if key == "tokens":
        user_id = raw.get("user_id")
        if type(user_id) is int and 0 < user_id <= MAX_ID:
            return f"tokens[#{pos},user_id={user_id}]"  # a user can have many
    elif key == "fx_rates":
        parts = [raw.get("account_id"), raw.get("currency"), raw.get("effective_from")]
        try:
            conv_id(parts[0])
            conv_currency(parts[1])
            conv_date(parts[2])
        except Bad:
            pass
        else:
            return f"fx_rates[account_id={parts[0]},currency={parts[1]},effective_from={parts[2]}]"
    else:
        record_id = raw.get("id")
        if type(record_id) is int and 0 < record_id <= MAX_ID:
            return f"{key}[id={record_id}]"
    return f"{key}[#{pos}]"


NULL_CREATED_AT: Final = (
    "cannot be null; leave it out (a new row takes the load's time, a stored one keeps its own)"
)


def normalize(
    kind: Kind, raw: Any, pos: int, problems: Problems, *, keep_stamps: bool = True
) -> Rec | None:
    """Check one record on its own; its given fields as columns, or None if it is not an
    object. Without `keep_stamps` a given `updated_at` is dropped (SEMANTICS R32)."""
    if type(raw) is not dict:
        if not isinstance(raw, Mapping):
            problems.add(f"{kind.key}[#{pos}]: {show(raw)} is not an object")
            return None
        raw = dict(raw)
    label = label_of(kind, raw, pos)
    row: dict[str, Any] = {}
    convs = kind.convs
    failed: set[str] = set()
    given_account: int | None = None
    persons: dict[str, tuple[str, int | None]] | None = None
    source: Any = ...
    for name, value in raw.items():
        spec = convs.get(name)
        if spec is not None:
            column, conv = spec
            if value is None and column == "created_at":  # a stored row's is never cleared
                problems.add(f"{label}.{name}: {NULL_CREATED_AT}")
                failed.add(column)
            elif value is None:
                row[column] = None
            else:
                try:
                    row[column] = conv(value)
                except Bad as exc:
                    problems.add(f"{label}.{name}: {exc}")
                    failed.add(column)
            continue
        if name in kind.ignored:
            continue
        alias_of = kind.aliases.get(name)
        if alias_of is not None:
            try:
                person = person_id(value)
            except Bad as exc:
                problems.add(f"{label}.{name}: {exc}")
                failed.add(alias_of)
            else:
                persons = persons or {}
                persons[alias_of] = (name, person)
        elif name == "source" and kind.has_source:
            source = value
        elif name == "account_id" and kind.account in ("initiative", "observation"):
            if value is not None:
                try:
                    given_account = conv_id(value)
                except Bad as exc:
                    problems.add(f"{label}.account_id: {exc}")
        else:
            problems.add(f"{label}.{shown_name(name)}: unknown field")
    if persons:
        for column, (name, person) in persons.items():
            if raw.get(column) is not None and column not in failed:
                if person is not None and person != row[column]:
                    problems.add(
                        f"{label}.{name}: id {person} does not match {column} {row[column]}"
                    )
            elif column not in row or row[column] is None:
                row[column] = person
    if source is not ...:
        _take_source(label=label, raw=raw, source=source, row=row, failed=failed, problems=problems)
    ignored = not keep_stamps and row.pop("updated_at", None) is not None
    kept = row.get("updated_at") if keep_stamps else None
    if kept is not None and (late := too_late_to_keep(kept)):
        problems.add(f"{label}.updated_at: {late}")
        failed.add("updated_at")
    if kind.prepare is not None:
        kind.prepare(row)
    rec = Rec(label, row, given_account, frozenset(failed))
    rec.stamp_ignored = ignored
    return rec


def _take_source(
    *,
    label: str,
    raw: dict[str, Any],
    source: Any,
    row: dict[str, Any],
    failed: set[str],
    problems: Problems,
) -> None:
    """SPEC 2.1 source object, nested: one field, so its parts left out are null (the whole
    source is given). The flattened `source_*` fields mean the same, one field each."""
    if source is None:
        for column, _ in SOURCE_PARTS.values():
            if column not in row:
                row[column] = None
        return
    if type(source) is not dict:
        problems.add(f"{label}.source: {show(source)} is not an object")
        return
    for part in source:
        if part not in SOURCE_PARTS:
            problems.add(f"{label}.source.{shown_name(part)}: unknown field")
    for part, (column, conv) in SOURCE_PARTS.items():
        value = source.get(part)
        if value is None:
            if column not in row:
                row[column] = None
            continue
        try:
            converted = conv(value)
        except Bad as exc:
            problems.add(f"{label}.source.{part}: {exc}")
            failed.add(column)
            continue
        if (
            column in raw
            and raw[column] is not None
            and column not in failed
            and row[column] != converted
        ):
            problems.add(f"{label}.source.{part}: does not match {column}")
        row[column] = converted


def merged(kind: Kind, row: dict[str, Any], stored: Mapping[Any, Any] | None) -> dict[str, Any]:
    """SEMANTICS R33: the record's fields over the stored row's, or over the defaults when
    the row is new. Stamps come along only when given or stored."""
    if stored is None:
        base = dict(kind.blank)
    else:
        base = {column: stored[column] for column in kind.blank}
        for stamp in kind.stamps:
            base[stamp] = stored[stamp]
    for column, value in row.items():
        # Null clears a column; one that cannot be null is cleared to its default.
        base[column] = kind.blank[column] if value is None and column in kind.blank else value
    return base


def missing_required(kind: Kind, rec: Rec) -> list[str]:
    """The problem lines of the required fields the (merged) row lacks; a field whose value
    was refused is named once, for that."""
    return [
        f"{rec.label}.{required.name}: required"
        for required in kind.required
        if rec.row.get(required.column) is None and required.column not in rec.failed
    ]
