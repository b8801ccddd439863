"""FOCUS 1.0 to 1.2 cost and usage data (IMPORT.md): CSV, gzipped CSV or Parquet, streamed.

A file is read a batch at a time with pyarrow's streaming readers (CSV blocks of
`CSV_BLOCK_BYTES`, Parquet batches of `PARQUET_BATCH_ROWS`), only the columns the import needs,
so a 5 GB export needs no more memory than its distinct groups. Rows are first summed by the
raw values that decide their entry (dates, currency, frequency, provider, service, billing
account and what the rules look at); each distinct combination is then read, matched and
grouped once (SEMANTICS R40).
"""

from __future__ import annotations

import csv
import decimal
import gzip
import io
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from airoi.imports import cells
from airoi.imports.cells import BadCell
from airoi.imports.grouping import EXACT, EntryKey, Groups
from airoi.imports.problems import Problems, where
from airoi.imports.rules import Rules

KIND: Final = "focus"
DEFAULT_AMOUNT: Final = "EffectiveCost"
DEFAULT_COST_TYPE: Final = "infrastructure"
START, END, CURRENCY = "ChargePeriodStart", "ChargePeriodEnd", "BillingCurrency"
FREQUENCY, PROVIDER, SERVICE, BILLING = (
    "ChargeFrequency",
    "ProviderName",
    "ServiceName",
    "BillingAccountId",
)
TAGS: Final = "Tags"
TAG_PREFIX: Final = "Tags."
REQUIRED: Final = (START, END, CURRENCY)
OPTIONAL: Final = (FREQUENCY, PROVIDER, SERVICE, BILLING)
# pyarrow's own default: larger blocks read further ahead and hold more (4 MiB blocks peaked at
# 423-450 MB importing a million rows, 1 MiB at 302-305 MB, no slower; bench/README.md).
CSV_BLOCK_BYTES: Final = 1 << 20
CANONICAL_VALUES: Final = 1_000_000  # distinct cell values shared; the table starts again past it
PARQUET_BATCH_ROWS: Final = 65_536
MAX_HEADER_BYTES: Final = 1 << 20
TAGS_CACHE: Final = 100_000  # distinct Tags texts kept parsed; the cache starts again past it
ONE_TIME: Final = "one-time"
MISSING: Final[Any] = object()
NO_NAME: Final = "-"

Progress = Callable[[int], None]  # rows read so far


def any_field(name: str) -> bool:
    """FOCUS `where` keys: any column by its specification name, or `Tags.KEY`."""
    return bool(name) and (not name.startswith(TAG_PREFIX) or len(name) > len(TAG_PREFIX))


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"PAR1"


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


def _csv_header(path: Path) -> list[str]:
    opener: Callable[..., Any] = gzip.open if _is_gzip(path) else open
    with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
        line = handle.readline(MAX_HEADER_BYTES)
    return next(csv.reader(io.StringIO(line)), [])


def _csv_batches(path: Path, columns: list[str]) -> Iterator[dict[str, Any]]:
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from pyarrow import csv as pa_csv  # type: ignore[import-untyped, import-not-found, unused-ignore]

    source: Any = pa.OSFile(str(path))
    if _is_gzip(path):
        source = pa.CompressedInputStream(source, "gzip")
    reader = pa_csv.open_csv(
        source,
        read_options=pa_csv.ReadOptions(block_size=CSV_BLOCK_BYTES),
        convert_options=pa_csv.ConvertOptions(
            include_columns=columns,
            column_types=dict.fromkeys(columns, pa.string()),
            null_values=["", "NULL"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        ),
    )
    for batch in reader:
        yield {name: batch.column(name) for name in columns}


def _parquet_batches(path: Path, columns: list[str]) -> Iterator[dict[str, Any]]:
    from pyarrow import parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with pq.ParquetFile(str(path)) as parquet:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns):
            yield {name: batch.column(name) for name in columns}


def _parquet_header(path: Path) -> list[str]:
    from pyarrow import parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with pq.ParquetFile(str(path)) as parquet:
        return list(parquet.schema_arrow.names)


class _Canonical:
    """A column's cells as Python values, each distinct value one object for the whole file.

    The rows are summed by a key of several text cells; made afresh for each row (what
    `to_pylist` gives), every lookup hashes and compares each text again. Dictionary-encoded
    by pyarrow first, a batch's distinct values become objects once, shared by every row that
    has them, whose hashes Python keeps: the grouping costs about half as much."""

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}

    def cells(self, column: Any) -> list[Any]:
        encoded = column.dictionary_encode()
        if len(self.values) > CANONICAL_VALUES:
            self.values.clear()
        shared = [self.values.setdefault(value, value) for value in encoded.dictionary.to_pylist()]
        shared.append(None)  # where a null cell's index points
        return [shared[i] for i in encoded.indices.fill_null(len(shared) - 1).to_pylist()]


class _Tags:
    """A row's Tags object (JSON text, or a map from a typed file) read for the keys the rules
    name, exactly as written (a key with stray spaces is another key)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self.cache: dict[Any, tuple[str | None, ...]] = {}
        self.empty = (None,) * len(self.keys)

    def values(self, raw: Any) -> tuple[str | None, ...]:
        if not self.keys or cells.is_null(raw):
            return self.empty
        hashable = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str)
        found = self.cache.get(hashable)
        if found is not None:
            return found
        if isinstance(raw, str):
            try:
                tags = json.loads(raw)
            except ValueError:
                raise BadCell("is not a JSON object") from None
        elif isinstance(raw, list):  # a Parquet map: [(key, value), ...]
            tags = dict(raw)
        else:
            tags = raw
        if not isinstance(tags, dict):
            raise BadCell("is not a JSON object")
        found = tuple(_tag_text(tags.get(key)) for key in self.keys)
        if len(self.cache) >= TAGS_CACHE:
            self.cache.clear()
        self.cache[hashable] = found
        return found


def _tag_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def read_focus(
    paths: Sequence[Path],
    rules: Rules,
    *,
    dates: tuple[date | None, date | None],
    problems: Problems,
    progress: Progress | None = None,
) -> Groups:
    """Every file read and grouped (R40); problems named by file, line and column."""
    groups = Groups(KIND)
    amount_column = rules.amount or DEFAULT_AMOUNT
    cost_type = rules.cost_type or DEFAULT_COST_TYPE
    done = 0
    for path in paths:
        done = _read_file(
            path, rules, amount_column, cost_type, dates, groups, problems, progress, done
        )
    return groups


def _read_file(
    path: Path,
    rules: Rules,
    amount_column: str,
    cost_type: str,
    dates: tuple[date | None, date | None],
    groups: Groups,
    problems: Problems,
    progress: Progress | None,
    done: int,
) -> int:
    try:
        parquet = _is_parquet(path)
    except OSError as exc:
        problems.at(path, None, None, f"cannot be read ({_reason(exc)})")
        return done
    shape = "Parquet" if parquet else "CSV"
    try:
        header = _parquet_header(path) if parquet else _csv_header(path)
    except Exception as exc:  # OSError, UnicodeDecodeError, gzip's, pyarrow's ArrowInvalid
        problems.at(path, None, None, f"cannot be read as FOCUS {shape} ({_reason(exc)})")
        return done
    first_line = "row" if parquet else "line"
    present = set(header)
    tag_keys = [name[len(TAG_PREFIX) :] for name in rules.fields if name.startswith(TAG_PREFIX)]
    plain_fields = [name for name in rules.fields if not name.startswith(TAG_PREFIX)]
    needed = {
        **dict.fromkeys(REQUIRED, "FOCUS requires it"),
        amount_column: "the rules' amount column",
        **dict.fromkeys(plain_fields, "a rule's where names it"),
    }
    if tag_keys:
        needed[TAGS] = "a rule's where names a tag"
    missing = [name for name in needed if name not in present]
    for name in missing:
        problems.at(
            path, f"{first_line} 1" if not parquet else None, name, f"missing ({needed[name]})"
        )
    if missing:
        return done
    columns = list(dict.fromkeys([*REQUIRED, amount_column, *plain_fields]))
    columns += [name for name in OPTIONAL if name in present and name not in columns]
    if tag_keys:
        columns.append(TAGS)
    tags = _Tags(tag_keys)
    canonical = _Canonical()
    # Rows summed by the raw values that decide their entry: key -> [amount, rows, first index]
    raw: dict[tuple[Any, ...], list[Any]] = {}
    index = 0

    def place(row_index: int) -> str:
        """A row's place: Parquet's row number, or the CSV line (the header is line 1)."""
        return f"row {row_index + 1}" if parquet else f"line {row_index + 2}"

    batches = _parquet_batches(path, columns) if parquet else _csv_batches(path, columns)
    absent: list[Any] = []
    try:
        with decimal.localcontext(EXACT):
            for batch in batches:
                size = len(batch[START])
                absent = absent if len(absent) == size else [None] * size
                amounts = batch[amount_column].to_pylist()
                keyed = zip(
                    canonical.cells(batch[START]),
                    canonical.cells(batch[END]),
                    canonical.cells(batch[CURRENCY]),
                    *(
                        canonical.cells(batch[name]) if name in batch else absent
                        for name in (FREQUENCY, PROVIDER, SERVICE, BILLING)
                    ),
                    *(canonical.cells(batch[name]) for name in plain_fields),
                    strict=True,
                )
                tag_cells = canonical.cells(batch[TAGS]) if tag_keys else absent
                for offset, (fixed, cell, tag_cell) in enumerate(
                    zip(keyed, amounts, tag_cells, strict=True)
                ):
                    key = fixed
                    if tag_keys:
                        try:
                            key = (*fixed, *tags.values(tag_cell))
                        except BadCell as exc:
                            problems.at(path, place(index + offset), TAGS, str(exc))
                            continue
                    amount = cell
                    if type(cell) is str:
                        amount = Decimal(cell)  # NaN, not an error, where it is not a number
                        if not amount.is_finite():
                            try:
                                amount = cells.decimal(cell)  # says why
                            except BadCell as exc:
                                problems.at(path, place(index + offset), amount_column, str(exc))
                                continue
                    elif cell is not None and not isinstance(cell, Decimal):
                        try:
                            amount = cells.decimal(cell)
                        except (BadCell, decimal.DecimalException) as exc:
                            problems.at(path, place(index + offset), amount_column, str(exc))
                            continue
                    slot = raw.get(key)
                    if slot is None:
                        raw[key] = [amount, 1, index + offset]
                    else:
                        slot[1] += 1
                        if amount is not None:
                            slot[0] = amount if slot[0] is None else slot[0] + amount
                index += size
                if progress is not None:
                    progress(done + index)
    except decimal.Inexact:
        problems.at(
            path, None, amount_column, "an amount has more digits than can be summed exactly"
        )
        return done + index
    except Exception as exc:  # pyarrow's errors reading a block: not this kind of file
        problems.at(path, place(index), None, f"cannot be read as FOCUS {shape} ({_reason(exc)})")
        return done + index
    groups.rows_read += index
    _resolve(path, raw, rules, cost_type, plain_fields, dates, groups, problems, place)
    return done + index


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _resolve(
    path: Path,
    raw: dict[tuple[Any, ...], list[Any]],
    rules: Rules,
    cost_type: str,
    plain_fields: list[str],
    dates: tuple[date | None, date | None],
    groups: Groups,
    problems: Problems,
    place: Callable[[int], str],
) -> None:
    """Each distinct combination read once: its dates, currency and rule (R40)."""
    match = rules.matcher()
    # Where each field a rule looks at sits in the raw key: seven fixed values, then the
    # plain columns, then the tags, each in the order rules.fields first names them.
    tail = [name for name in rules.fields if not name.startswith(TAG_PREFIX)]
    tail += [name for name in rules.fields if name.startswith(TAG_PREFIX)]
    positions = [7 + tail.index(name) for name in rules.fields]
    moments: dict[Any, datetime | None] = {}

    def instant(raw_value: Any) -> datetime | None:
        """A start or end read once for every row that has it (BadCell says why not)."""
        if raw_value not in moments:
            moments[raw_value] = cells.instant(raw_value)
        return moments[raw_value]

    rules_taking: dict[tuple[Any, ...], Any] = {}  # what the rules look at -> the rule
    low, high = dates
    for key, (amount, rows, first) in raw.items():
        start_raw, end_raw, currency_raw, frequency, provider, service, billing = key[:7]
        line = place(first)
        try:
            start = instant(start_raw)
        except BadCell as exc:
            problems.at(path, line, START, str(exc))
            continue
        try:
            end = instant(end_raw)
        except BadCell as exc:
            problems.at(path, line, END, str(exc))
            continue
        if start is None:
            problems.at(path, line, START, "required: the row has no start")
            continue
        if end is None:
            problems.at(path, line, END, "required: the row has no end")
            continue
        if end <= start:
            problems.at(path, line, END, "must be later than ChargePeriodStart")
            continue
        try:
            currency = cells.currency(currency_raw)
        except BadCell as exc:
            problems.at(path, line, CURRENCY, str(exc))
            continue
        if currency is None:
            problems.at(path, line, CURRENCY, "required: the row has no currency")
            continue
        period_start = cells.start_date(start)
        billing_account = cells.text(billing)
        groups.billing_accounts.add(billing_account)  # held by the files, in the dates or not
        if (low is not None and period_start < low) or (high is not None and period_start > high):
            groups.rows_outside += rows
            continue
        groups.saw(period_start, billing_account)
        looked_at = tuple(key[pos] for pos in positions)
        rule = rules_taking.get(looked_at, MISSING)
        if rule is MISSING:
            rule = rules_taking[looked_at] = match(looked_at)
        cents = None if amount is None else amount.scaleb(2, EXACT)
        if rule is None:
            named = (cells.text(provider) or NO_NAME, cells.text(service) or NO_NAME)
            here = where(path, line) if named not in groups.unmatched else ""
            groups.miss(named, currency, cents, rows, here)
            continue
        one_time = frequency is not None and str(frequency).strip().casefold() == ONE_TIME
        entry = EntryKey(
            initiative_id=rule.initiative_id,
            period_start=period_start,
            period_end=cells.end_date(end),
            currency=currency,
            cost_category=rule.cost_category or ("capex" if one_time else "opex"),
            cost_type=rule.cost_type or cost_type,
            vendor_name=rule.vendor_name or cells.text(provider),
            description=cells.text(service),
            billing_account=billing_account,
        )
        groups.add(entry, cents, rows, where(path, line) if entry not in groups.where else "")
