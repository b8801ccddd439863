"""Rows to Arrow and pandas with the API's types kept (imported only when asked for).

Amounts are integer cents and stay int64 (SPEC 2); a `string (date)` becomes a date and a
`string (datetime)` a UTC timestamp. Types are decided by field name, so a column keeps its
type even on a page where every value is null. Nested objects are flattened with `_`
(`owner` -> `owner_id`, `owner_name`; `source` -> `source_type`, ...), the bundle's own
names (BUNDLE.md); a null object is null in each of those columns. Arrays stay lists.
`airoi pull` and the dlt source make their tables with `rows_to_arrow`, so both have the
same columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import pyarrow  # type: ignore[import-untyped, import-not-found, unused-ignore]

# Field names (the last part of a flattened name) by the type SPEC 2 gives them.
INTEGER_FIELDS = frozenset(
    {
        "id",
        "initiative_id",
        "metric_id",
        "vendor_id",
        "formula_id",
        "connection_id",
        "priority",
        "roi_time_horizon_years",
        "calculation_version",
        "sample_size",
        "version_count",
    }
)
NUMBER_FIELDS = frozenset({"confidence_score", "quality_score", "value", "roi", "used_ratio"})
BOOLEAN_FIELDS = frozenset(
    {
        "is_sample",
        "is_estimated",
        "locked",
        "counts_toward_roi",
        "currency_metric",
        "active",
        "stage_changed",
        "simulated",
        "budgeted",
        "revised",
        "revision_pending",
    }
)
LIST_FIELDS = frozenset({"primary_source_categories", "metric_categories", "over_parts"})
DATE_FIELDS = frozenset(
    {
        "period_start",
        "period_end",
        "reported_on",
        "as_of",
        "budget_started_on",
        "next_review_on",
        "effective_from",
        "ends_on",
        "from",
        "through",
    }
)


PERSON_FIELDS = ("id", "name")
# The fields of each nested object SPEC 2 serves, by its flattened name: a null one (no
# owner, an unbudgeted row's current_version) becomes these fields, null. Otherwise a
# column `owner` of nulls stood beside `owner_id` and `owner_name`, and which columns a
# page made depended on the rows it happened to hold.
NULL_OBJECTS: dict[str, dict[str, None]] = {
    name: dict.fromkeys(fields)
    for name, fields in {
        "owner": PERSON_FIELDS,
        "decided_by": PERSON_FIELDS,
        "connected_by": PERSON_FIELDS,
        "source": ("type", "ref", "connection_id"),
        "current_version": (
            "id",
            "effective_from",
            "ends_on",
            "capex_cents",
            "opex_cents",
            "opex_cadence",
            "source",
            "reason",
            "set_by",
        ),
        "current_version_set_by": PERSON_FIELDS,
    }.items()
}


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    _flatten_into(row, prefix, flat, {})
    return flat


def _flatten_into(
    row: Mapping[str, Any], prefix: str, flat: dict[str, Any], leaves: dict[str, str]
) -> None:
    """Flatten `row` into `flat`, and record the field name each new column ends in."""
    for name, value in row.items():
        column = prefix + name if prefix else name
        nested = NULL_OBJECTS.get(column) if value is None else value
        # Decoded JSON objects are dicts; `isinstance(value, Mapping)` costs ten times more.
        if isinstance(nested, dict):
            _flatten_into(nested, column + "_", flat, leaves)
        else:
            flat[column] = value
            if column not in leaves:
                leaves[column] = name


def kind_of(leaf: str) -> str:
    """int, float, bool, list, date, datetime or '' (text, or let Arrow infer) for a field
    name."""
    if leaf in INTEGER_FIELDS or leaf.endswith("_cents"):
        return "int"
    if leaf in NUMBER_FIELDS:
        return "float"
    if leaf in BOOLEAN_FIELDS:
        return "bool"
    if leaf in LIST_FIELDS:
        return "list"
    if leaf in DATE_FIELDS:
        return "date"
    if leaf.endswith("_at"):
        return "datetime"
    return ""


def _to_date(value: Any) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def _to_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00").replace("z", "+00:00"))


def _temporal(values: list[Any], kind: str) -> pyarrow.Array:
    """Dates and datetimes parsed by Arrow in one call; value by value if that refuses."""
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

    target = pa.date32() if kind == "date" else pa.timestamp("us", tz="UTC")
    try:
        return pa.array(values, type=pa.string()).cast(target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        convert = _to_date if kind == "date" else _to_datetime
        return pa.array([convert(v) for v in values], type=target)


def rows_to_arrow(rows: Iterable[Mapping[str, Any]]) -> pyarrow.Table:
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

    flat_rows: list[dict[str, Any]] = []
    leaves: dict[str, str] = {}
    for row in rows:
        flat: dict[str, Any] = {}
        _flatten_into(row, "", flat, leaves)
        flat_rows.append(flat)
    columns: dict[str, pyarrow.Array] = {}
    for column, leaf in leaves.items():
        values = [row.get(column) for row in flat_rows]
        kind = kind_of(leaf)
        if kind == "int":
            columns[column] = pa.array(values, type=pa.int64())
        elif kind == "float":
            columns[column] = pa.array(
                [None if v is None else float(v) for v in values], type=pa.float64()
            )
        elif kind == "bool":
            columns[column] = pa.array(values, type=pa.bool_())
        elif kind == "list":
            columns[column] = pa.array(values, type=pa.list_(pa.string()))
        elif kind in ("date", "datetime"):
            columns[column] = _temporal(values, kind)
        elif all(v is None for v in values):
            columns[column] = pa.array(values, type=pa.string())
        else:
            array = pa.array(values)
            if pa.types.is_list(array.type) and pa.types.is_null(array.type.value_type):
                array = array.cast(pa.list_(pa.string()))
            columns[column] = array
    return pa.table(columns) if columns else pa.table({})


def arrow_to_pandas(table: pyarrow.Table) -> pandas.DataFrame:
    """A DataFrame in which integer columns are int64 (Int64 where a value is null)."""
    import pandas as pd  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

    frame = table.to_pandas(date_as_object=True)
    for index, field in enumerate(table.schema):
        if pa.types.is_integer(field.type) and table.column(index).null_count:
            frame[field.name] = pd.array(table.column(index).to_pylist(), dtype="Int64")
    return frame
