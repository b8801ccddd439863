"""Frames as a notebook user meets them: stable types, empty lists, polars, progress, and a
missing extra named."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, date, datetime

import pytest

from airoi.client import Client
from airoi.client.progress import shown
from tests.client.conftest import Account, raw_walk
from tests.client.test_light import light

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

COSTS = [10_000 + n for n in range(7)]  # the account's cost entries, in id order
LATER = datetime(2027, 1, 1, tzinfo=UTC)  # after every row's updated_at: an empty list


def test_cents_are_nullable_integers_whether_or_not_a_null_came(api: Client) -> None:
    costs = api.cost_entries().to_pandas()  # no null amount among them
    values = api.value_entries().to_pandas()  # one null amount
    assert [c for c in costs.columns if c.endswith("_cents")] == [
        "amount_cents",
        "account_amount_cents",
    ]
    for frame in (costs, values):
        assert {str(frame[c].dtype) for c in frame.columns if c.endswith("_cents")} == {"Int64"}
    assert costs["amount_cents"].tolist() == COSTS
    assert costs["amount_cents"].sum() == 70_021
    assert values["amount_cents"].isna().sum() == 1
    approved = values[values["status"] == "approved"]
    assert approved["amount_cents"].sum() == 150_006  # 50,000 + 50,002 + 50,004
    # Integers the description never lets be null stay numpy int64; the others are Int64.
    assert (str(costs["id"].dtype), str(costs["initiative_id"].dtype)) == ("int64", "int64")
    assert str(costs["vendor_id"].dtype) == "Int64"
    assert (str(costs["locked"].dtype), str(values["counts_toward_roi"].dtype)) == ("bool", "bool")


def test_dates_are_datetimes_and_datetimes_are_utc(api: Client) -> None:
    costs = api.cost_entries().to_pandas()
    for column in ("period_start", "period_end", "reported_on"):
        assert str(costs[column].dtype) == "datetime64[ms]"
    # Months 1, 2, 3, 4, 5, 1, 2 (n % 5 + 1): three of them from March on.
    assert costs["period_start"].tolist()[:3] == [
        pd.Timestamp("2026-01-01"),
        pd.Timestamp("2026-02-01"),
        pd.Timestamp("2026-03-01"),
    ]
    assert int((costs["period_start"] >= "2026-03-01").sum()) == 3
    assert str(costs["updated_at"].dtype) == "datetime64[us, UTC]"
    assert set(costs["updated_at"]) == {pd.Timestamp("2026-06-01 09:00", tz="UTC")}
    table = api.cost_entries().to_arrow()
    assert str(table.schema.field("period_start").type) == "date32[day]"
    assert str(table.schema.field("updated_at").type) == "timestamp[us, tz=UTC]"
    assert table.column("period_start").to_pylist()[0] == date(2026, 1, 1)


@pytest.mark.parametrize(
    "resource",
    ["initiatives", "cost_entries", "value_entries", "metrics", "observations", "decisions"],
)
def test_an_empty_list_has_its_columns_and_their_types(api: Client, resource: str) -> None:
    full = getattr(api, resource)()
    empty = getattr(api, resource)(updated_since=LATER)
    assert empty.to_list() == []
    full_table, empty_table = full.to_arrow(), empty.to_arrow()
    assert full_table.num_rows > 0
    assert empty_table.num_rows == 0
    assert empty_table.schema == full_table.schema
    full_frame, empty_frame = full.to_pandas(), empty.to_pandas()
    assert len(empty_frame) == 0
    assert empty_frame.dtypes.to_dict() == full_frame.dtypes.to_dict()


def test_the_budgets_frame_has_no_object_column(api: Client, account: Account) -> None:
    budgets = api.budgets(include_sample=True).to_pandas()
    assert [c for c, kind in budgets.dtypes.items() if str(kind) == "object"] == []
    # over_parts, a list, is an Arrow list of strings, not a column of numpy arrays.
    assert str(budgets["over_parts"].dtype) == "list<item: string>[pyarrow]"
    assert str(budgets["variance_cents"].dtype) == "Int64"
    by_initiative = budgets.set_index("initiative_id")
    budgeted = account.initiatives[0]
    # Its opex: cost entries 0, 3 and 6, 10,000 + 10,003 + 10,006 cents, over the budget's
    # 5,000 a month from January; the unbudgeted two are over nothing.
    assert by_initiative.loc[budgeted, "opex_actual_cents"] == 30_009
    assert budgets["over_parts"].list.len().tolist() == [1, 0, 0]
    assert by_initiative.loc[budgeted, "over_parts"] == ["opex"]  # a list, not a numpy array
    assert by_initiative.loc[budgeted, "current_version_effective_from"] == pd.Timestamp(
        "2026-01-01"
    )
    assert by_initiative.loc[budgeted, "current_version_capex_cents"] == 100_000
    assert by_initiative.loc[budgeted, "current_version_opex_cents"] == 5_000
    unbudgeted = account.initiatives[1]
    assert pd.isna(by_initiative.loc[unbudgeted, "current_version_capex_cents"])


def test_pages_are_put_together_in_order(api: Client, base_url: str, account: Account) -> None:
    # Two rows a page: value entries come in three pages, one with the null amount.
    rows = raw_walk(base_url, account.token, "value_entries")
    table = api.value_entries().to_arrow()
    assert table.column("id").to_pylist() == [row["id"] for row in rows]
    assert table.column("amount_cents").to_pylist() == [row["amount_cents"] for row in rows]
    assert str(table.schema.field("amount_cents").type) == "int64"


def test_polars_keeps_the_types(api: Client) -> None:
    pl = pytest.importorskip("polars")
    costs = api.cost_entries().to_polars()
    assert isinstance(costs, pl.DataFrame)
    assert costs.schema["amount_cents"] == pl.Int64
    assert costs.schema["period_start"] == pl.Date
    assert costs.schema["updated_at"] == pl.Datetime("us", "UTC")
    assert costs["amount_cents"].to_list() == COSTS
    assert costs["period_start"][0] == date(2026, 1, 1)
    links = api.integrations().to_polars()
    assert links.schema["metric_categories"] == pl.List(pl.String)
    empty = api.cost_entries(updated_since=LATER).to_polars()
    assert (empty.height, empty.schema) == (0, costs.schema)


def test_progress_is_shown_when_asked(api: Client, capsys: pytest.CaptureFixture[str]) -> None:
    api.cost_entries().to_pandas(progress=True)
    said = capsys.readouterr().err
    assert "cost_entries" in said
    assert "7 rows" in said


def test_no_progress_off_a_terminal(api: Client, capsys: pytest.CaptureFixture[str]) -> None:
    api.cost_entries().to_pandas()  # pytest's standard error is no terminal
    api.cost_entries().to_arrow(progress=False)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_by_default_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert (shown(None), shown(False), shown(True)) == (True, False, True)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a notebook's, a file, a pipe
    assert (shown(None), shown(False), shown(True)) == (False, False, True)


MISSING = [
    (
        "to_pandas",
        ("pyarrow",),
        "to_pandas() needs pandas and pyarrow (pyarrow is not installed): "
        "pip install -e '.[dataframe]' in the airoi clone",
    ),
    (
        "to_pandas",
        ("pandas", "pyarrow"),
        "to_pandas() needs pandas and pyarrow (pandas and pyarrow are not installed): "
        "pip install -e '.[dataframe]' in the airoi clone",
    ),
    (
        "to_arrow",
        ("pyarrow",),
        "to_arrow() needs pyarrow (pyarrow is not installed): "
        "pip install -e '.[dataframe]' in the airoi clone",
    ),
    (
        "to_polars",
        ("polars",),
        "to_polars() needs polars and pyarrow (polars is not installed): "
        "pip install -e '.[polars]' in the airoi clone",
    ),
]


@pytest.mark.parametrize(("call", "blocked", "message"), MISSING)
def test_a_missing_extra_is_named_before_any_request(
    call: str, blocked: tuple[str, ...], message: str
) -> None:
    done = light(
        f"""
import json
import httpx
from airoi.client import Client, MissingExtraError

transport = httpx.MockTransport(lambda request: httpx.Response(500))
api = Client("http://api.test/api/v1", "secret", transport=transport)
try:
    api.cost_entries().{call}()
except MissingExtraError as exc:
    print(json.dumps({{
        "message": str(exc), "import_error": isinstance(exc, ImportError),
        "name": exc.name, "extra": exc.extra, "sent": api.requests_sent,
    }}))
""",
        blocked=blocked,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["message"] == message
    assert answer["import_error"] is True
    assert answer["name"] == blocked[0]
    assert f"'.[{answer['extra']}]'" in message
    assert answer["sent"] == 0  # said before the list was asked for
