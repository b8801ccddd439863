"""The client against the real server: walks, filters, errors and frames."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx
import pytest

from airoi.client import AiroiError, Client
from tests.client.conftest import Account, raw_walk

LISTS = [
    ("initiatives", {"include_sample": True}),
    ("cost_entries", {}),
    ("value_entries", {}),
    ("metrics", {}),
    ("observations", {}),
    ("budgets", {"include_sample": True}),
    ("decisions", {}),
    ("integrations", {}),
]


@pytest.mark.parametrize(("resource", "params"), LISTS, ids=[name for name, _ in LISTS])
def test_walk_equals_raw_http(
    api: Client, base_url: str, account: Account, resource: str, params: dict[str, bool]
) -> None:
    raw_params = {k: str(v).lower() for k, v in params.items()}
    expected = raw_walk(base_url, account.token, resource, **raw_params)
    result = getattr(api, resource)(**params)  # two rows a page: several cursors followed
    assert list(result) == expected
    assert list(result) == expected  # a second iteration walks again
    assert expected


def test_pages_follow_cursors(api: Client, account: Account) -> None:
    pages = list(api.cost_entries().pages())
    assert [len(p.data) for p in pages] == [2, 2, 2, 1]
    assert pages[0].cursor is None
    assert [p.cursor for p in pages[1:]] == [p.next_cursor for p in pages[:-1]]
    assert [p.has_more for p in pages] == [True, True, True, False]
    resumed = list(api.cost_entries(cursor=pages[1].next_cursor))
    assert resumed == pages[2].data + pages[3].data


def test_filters_as_keywords(api: Client, base_url: str, account: Account) -> None:
    assert [r["status"] for r in api.value_entries(status="approved")] == ["approved"] * 3
    first = account.initiatives[0]
    assert {r["initiative_id"] for r in api.cost_entries(initiative_id=first)} == {first}
    q1 = list(api.cost_entries(period_from=date(2026, 1, 1), period_to="2026-03-31"))
    assert q1 == raw_walk(
        base_url, account.token, "cost_entries", period_from="2026-01-01", period_to="2026-03-31"
    )
    assert {r["period_start"] for r in q1} == {"2026-01-01", "2026-02-01", "2026-03-01"}
    # updated_since as an aware datetime, a naive (UTC) one, or the API's own text.
    for since in (
        datetime(2026, 6, 1, 9, tzinfo=UTC),
        datetime(2026, 6, 1, 9),
        "2026-06-01T09:00:00.000Z",
    ):
        assert len(list(api.cost_entries(updated_since=since))) == 7
    assert list(api.cost_entries(updated_since=datetime(2026, 6, 1, 9, 0, 1))) == []
    # A date is its first moment in UTC (it was an AttributeError): 2026-06-01 09:00 is after.
    assert len(list(api.cost_entries(updated_since=date(2026, 6, 1)))) == 7
    assert list(api.cost_entries(updated_since=date(2026, 6, 2))) == []
    assert [r["metric_key"] for r in api.observations(metric_key="tickets_resolved")] == [
        "tickets_resolved"
    ] * 3
    assert len(list(api.decisions(outcome="continue"))) == 1
    assert list(api.decisions(outcome="retire")) == []
    assert len(list(api.integrations(platform="openai", status="active"))) == 1
    assert [r["initiative_id"] for r in api.budgets(budgeted=True, include_sample=True)] == [
        account.initiatives[0]
    ]


def test_roi_and_one_initiative(api: Client, account: Account) -> None:
    portfolio = api.roi(window="all")
    assert portfolio["scope"]["type"] == "portfolio"
    assert portfolio["approved_value_cents"] == 50_000 + 50_002 + 50_004
    assert portfolio["total_cost_cents"] == sum(10_000 + n for n in range(7))
    one = api.roi(initiative_id=account.initiatives[0])
    assert one["scope"] == {
        "type": "initiative",
        "id": account.initiatives[0],
        "title": "Initiative 0",
    }
    initiative = api.initiative(account.initiatives[1])
    assert initiative["id"] == account.initiatives[1]
    assert initiative["owner"]["name"] == "Ada Lovelace"


def test_errors_are_airoi_errors(api: Client, base_url: str, account: Account) -> None:
    with pytest.raises(AiroiError) as missing:
        api.initiative(999_999)
    assert missing.value.status == 404
    assert missing.value.message.endswith(".")
    assert missing.value.body is not None
    detail = missing.value.body["error"]
    assert (detail["status"], detail["message"]) == (404, missing.value.message)
    # The request id, when the service gives one (X-Request-Id, error.request_id), comes along.
    assert missing.value.request_id == detail.get("request_id", missing.value.request_id)
    assert missing.value.request_id is None or len(missing.value.request_id) >= 8
    with pytest.raises(AiroiError) as bad:
        api.roi(window="2yr")  # type: ignore[arg-type]
    assert bad.value.status == 400
    assert "window" in bad.value.message
    with pytest.raises(AiroiError) as unknown_cursor:
        list(api.cost_entries(cursor="not-a-cursor"))
    assert unknown_cursor.value.status == 400
    with Client(base_url, "airoi_nope-" + "x" * 32) as stranger, pytest.raises(AiroiError) as anon:
        list(stranger.metrics())
    assert anon.value.status == 401
    assert str(anon.value).startswith("401: ")


def test_base_url_without_api_path(base_url: str, account: Account) -> None:
    origin = base_url.removesuffix("/api/v1")
    with Client(origin + "/", account.token) as client:
        assert client.base_url == base_url
        assert len(list(client.metrics())) == 1


def test_frames_keep_cents_and_dates(api: Client) -> None:
    pytest.importorskip("pandas")
    costs = api.cost_entries().to_pandas()
    assert len(costs) == 7
    # Cents are nullable Int64 with or without a null (tests/client/test_frames.py).
    assert str(costs["amount_cents"].dtype) == "Int64"
    assert str(costs["id"].dtype) == "int64"
    assert costs["amount_cents"].sum() == sum(10_000 + n for n in range(7))
    assert str(costs["period_start"].dtype) == "datetime64[ms]"
    assert costs["period_start"].min().date() == date(2026, 1, 1)
    assert str(costs["updated_at"].dtype).startswith("datetime64[")
    assert str(costs["updated_at"].dt.tz) == "UTC"
    assert "source_type" in costs.columns  # nested objects flattened with _
    # A null amount keeps the column integer (nullable Int64), never float.
    values = api.value_entries().to_pandas()
    assert str(values["amount_cents"].dtype) == "Int64"
    assert values["amount_cents"].isna().sum() == 1
    approved = values[values["counts_toward_roi"]]
    by_initiative = approved.groupby("initiative_id")["amount_cents"].sum().to_dict()
    assert by_initiative == {1002: 50_000, 1003: 50_004, 1004: 50_002}
    budgets = api.budgets(include_sample=True).to_pandas()
    assert str(budgets["variance_cents"].dtype) == "Int64"
    effective = budgets["current_version_effective_from"].dropna().dt.date.tolist()
    assert effective == [date(2026, 1, 1)]
    table = api.metrics().to_arrow()
    assert table.num_rows == 1
    assert str(table.schema.field("id").type) == "int64"


class _Seen(httpx.HTTPTransport):
    """The real transport, noting what each answer said of its encoding."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str | None] = []
        self.encodings: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request.headers.get("accept-encoding"))
        response = super().handle_request(request)
        self.encodings.append(response.headers.get("content-encoding"))
        return response


def test_the_client_asks_for_gzip_and_reads_it(base_url: str, account: Account) -> None:
    # A page of 500 cost entries is about a tenth the bytes gzipped (bench.ceiling).
    seen = _Seen()
    with Client(base_url, account.token, transport=seen) as gzipping:
        rows = gzipping.cost_entries().to_list()
    assert rows == raw_walk(base_url, account.token, "cost_entries")
    assert seen.asked and set(seen.asked) == {"gzip"}
    # The fixture's pages are small; the OpenAPI description (well past 1 KiB) is not.
    seen = _Seen()
    with Client(base_url, account.token, transport=seen) as gzipping:
        description = gzipping.get_json("/openapi.json")
    assert description["openapi"].startswith("3.")
    assert seen.encodings == ["gzip"]
