"""The dashboard in a real browser: `airoi demo`'s store served by `airoi serve`, the page
driven by Chromium (docs/dashboard.md).

One server and one browser for the module; each test has a fresh browser context (its own
session storage). Every figure the page shows is compared with the API's, fetched here
independently with httpx. Throughout, no request leaves the server, the console logs no
error and the Content-Security-Policy reports no violation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.settings import Settings
from tests.conftest import _unavailable
from tests.factories import BundleBuilder
from tests.servers import RunningServer, demo_served

ROOT = Path(__file__).resolve().parents[2]
# The day the demo's story is told from, fixed so that the screenshots are the same each run.
TODAY = "2026-11-26"
# Written to docs/screenshots/ when this names that folder (docs/dashboard.md says how);
# otherwise into the test's own temporary folder.
SCREENSHOTS_ENV = "AIROI_TEST_SCREENSHOTS"
# A view drawn, and what is asked for looked for inside it: the nav's links carry data-view
# too, and would match at once while the view before is still the one shown.
READY = "body[data-state=ready] #view"
# What the page's script sees of a CSP violation (Playwright's init scripts are not bound by
# the policy, so this listener is there before the page's own code).
LISTEN_FOR_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""
SHOWN_FIGURES = """
els => els.map(e => ({
  figure: e.dataset.figure,
  cents: e.dataset.cents,
  key: e.dataset.key ?? null,
  window: e.closest('[data-window]')?.dataset.window ?? null,
  text: e.textContent,
  title: e.getAttribute('title'),
}))
"""


@dataclass(frozen=True)
class Served:
    base: str
    token: str
    link: str  # the dashboard link `airoi demo` printed, as path and fragment
    store_url: str

    def api(self, path: str, token: str | None = None, **params: Any) -> Any:
        response = httpx.get(
            f"{self.base}/api/v1{path}",
            params=params,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=30,
        )
        if token is None:
            response.raise_for_status()
        return response.json()

    def rows(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """Every row of a list, page after page."""
        rows: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.api(path, limit=500, **params, **({"cursor": cursor} if cursor else {}))
            rows += page["data"]
            if not page["page"]["has_more"]:
                return rows
            cursor = page["page"]["next_cursor"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with demo_served(tmp_path_factory.mktemp("dashboard"), AIROI_TODAY=TODAY) as demo:
        link = re.search(r"^Dashboard:\s+http://localhost:8000(/\S*)$", demo.printed, re.MULTILINE)
        assert link, demo.printed
        yield Served(demo.origin, demo.token, link.group(1), demo.database_url)


@dataclass
class Watched:
    """A page, with what it asked for and what it complained of."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    # A failed fetch is logged by the browser itself; a test that expects one says which.
    expected_errors: tuple[str, ...] = ()
    # Another server of the test's own (host:port), besides the module's.
    other_server: str | None = None

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations || []"))

    def figures(self) -> list[dict[str, Any]]:
        return list(self.page.eval_on_selector_all("[data-cents]", SHOWN_FIGURES))


@pytest.fixture
def watched(browser: Any, served: Served) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.add_init_script(LISTEN_FOR_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(10_000)
    watch = Watched(page)
    page.on("request", lambda request: watch.requests.append(request.url))
    page.on(
        "console",
        lambda message: (
            watch.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: watch.console_errors.append(f"uncaught: {error}"))
    yield watch
    try:
        # No request leaves the server: every one is to its host and port (or a data: URL).
        here = urlsplit(served.base).netloc
        elsewhere = [
            url
            for url in watch.requests
            if not url.startswith("data:")
            and urlsplit(url).netloc not in (here, watch.other_server)
        ]
        assert elsewhere == []
        assert watch.requests, "the page asked for nothing"
        unexpected = [
            text
            for text in watch.console_errors
            if not any(expected in text for expected in watch.expected_errors)
        ]
        assert unexpected == []
        assert watch.violations() == []
    finally:
        context.close()


def sign_in(watch: Watched, served: Served) -> None:
    watch.page.goto(f"{served.base}{served.link}")
    watch.page.wait_for_selector(READY)


def wait_for(watch: Watched, selector: str) -> None:
    watch.page.wait_for_selector(f"{READY} {selector}")


# --- what the API says, worked out here -----------------------------------------------

ROI_FIELDS = {
    "roi.approved_value_cents": ("approved_value_cents",),
    "roi.total_cost_cents": ("total_cost_cents",),
    "roi.net_value_cents": ("net_value_cents",),
    "roi.cost.capex_cents": ("cost", "capex_cents"),
    "roi.cost.opex_cents": ("cost", "opex_cents"),
}
# The fields the portfolio shows of each breakdown's rows.
BREAKDOWN_FIELDS = {
    "month": (
        "approved_value_cents",
        "capex_cents",
        "opex_cents",
        "total_cost_cents",
        "net_value_cents",
    ),
    "quarter": (
        "approved_value_cents",
        "capex_cents",
        "opex_cents",
        "total_cost_cents",
        "net_value_cents",
    ),
    "initiative": ("approved_value_cents", "total_cost_cents", "net_value_cents"),
    "vendor": ("capex_cents", "opex_cents", "total_cost_cents"),
}

Figures = dict[tuple[str, str | None], str]


def roi_figures(roi: dict[str, Any]) -> Figures:
    figures: Figures = {}
    for figure, path in ROI_FIELDS.items():
        value: Any = roi
        for part in path:
            value = value[part]
        figures[(figure, None)] = str(value)
    return figures


def breakdown_figures(served: Served, by: str, **scope: Any) -> Figures:
    rows = served.rows("/roi/breakdown", by=by, **scope)
    roi = served.api("/roi", **scope)
    # Independent of the page: the rows add up to /roi's figures (SEMANTICS R37).
    assert sum(row["total_cost_cents"] for row in rows) == roi["total_cost_cents"]
    return {
        (f"breakdown.{by}.{name}", "" if row["key"] is None else str(row["key"])): str(row[name])
        for row in rows
        for name in BREAKDOWN_FIELDS[by]
    }


AWAITING = ("draft", "calculated", "reviewed")


def awaiting_value(served: Served, window: str, initiative_id: int | None = None) -> str:
    """Value entries not yet approved (SPEC 3) dated in the window, summed here from the
    entries themselves: the portfolio's (samples left out, SEMANTICS R7) or one initiative's."""
    period = served.api("/roi", window=window)["period"]
    samples = {row["id"] for row in served.rows("/initiatives", include_sample="true")} - {
        row["id"] for row in served.rows("/initiatives")
    }
    total = 0
    for status in AWAITING:
        for entry in served.rows("/value_entries", status=status):
            mine = (
                entry["initiative_id"] == initiative_id
                if initiative_id is not None
                else entry["initiative_id"] not in samples
            )
            dated = (
                "from" not in period or period["from"] <= entry["reported_on"] <= period["through"]
            )
            if mine and dated:
                total += entry["account_amount_cents"] or 0
    return str(total)


def shown(watch: Watched, window: str, within: str = "") -> Figures:
    figures: Figures = {}
    for item in watch.page.eval_on_selector_all(f"{within} [data-cents]", SHOWN_FIGURES):
        assert item["window"] == window, item
        key = (item["figure"], item["key"])
        assert key not in figures, f"{key} is shown twice"
        figures[key] = item["cents"]
    return figures


def dollars(cents: int, places: str) -> str:
    amount = (Decimal(cents) / 100).quantize(Decimal(places), rounding=ROUND_HALF_UP)
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,}"


# --- the tests ------------------------------------------------------------------------


def test_the_demo_link_signs_in_and_the_token_leaves_the_address_bar(
    watched: Watched, served: Served
) -> None:
    assert served.link == f"/#token={served.token}"
    sign_in(watched, served)
    page = watched.page
    assert page.url == f"{served.base}/"
    assert served.token not in page.url
    assert page.evaluate("sessionStorage.getItem('airoi.token')") == served.token
    # The fragment never reached the server, and no address carried the token.
    assert all(served.token not in url for url in watched.requests)
    # Reloading keeps the tab signed in; the token is not back in the address bar.
    page.reload()
    page.wait_for_selector(READY)
    assert page.url == f"{served.base}/"
    assert page.is_visible("text=Sign out")
    # A link with the token followed in a tab already open: taken out of the bar just the same.
    page.evaluate("token => { location.hash = `#token=${token}`; }", served.token)
    page.wait_for_url(f"{served.base}/")
    page.wait_for_selector(f"{READY} [data-view=portfolio]")
    assert served.token not in page.url


def test_a_link_whose_token_cannot_be_read_leaves_the_bar_and_asks_for_it(
    watched: Watched, served: Served
) -> None:
    # A stray % (a link cut or mangled in a chat): decoding it throws, and the page stayed blank
    # with the token in the address bar.
    page = watched.page
    page.goto(f"{served.base}/#token=airoi_abc%ZZx")
    page.wait_for_selector("#signin:not([hidden])")
    assert page.url == f"{served.base}/"
    assert page.evaluate("sessionStorage.getItem('airoi.token')") is None
    message = page.inner_text("#signin-error")
    assert "could not be read" in message and "airoi_abc" not in message
    # In a tab already signed in: taken out of the bar, and the tab signed out, saying why.
    sign_in(watched, served)
    page.evaluate("location.hash = '#token=%E0%A4%A'")
    page.wait_for_selector("#signin:not([hidden])")
    assert page.url == f"{served.base}/"
    assert page.evaluate("sessionStorage.getItem('airoi.token')") is None
    assert "could not be read" in page.inner_text("#signin-error")


def test_the_tools_page_links_open_the_dashboards_views(watched: Watched, served: Served) -> None:
    # The tools' links: AIROI_APP_URL (this server) + a path of airoi/catalog/pages.json.
    sign_in(watched, served)
    page = watched.page
    initiative = served.rows("/budgets")[0]["initiative_id"]
    for path, view, route in [
        (f"/initiatives/{initiative}", "initiative", f"/#/initiatives/{initiative}"),
        ("/integrations", "connections", "/#/connections"),
        ("/budgets", "budgets", "/#/budgets"),
        ("/roi", "portfolio", "/#/"),
    ]:
        page.goto(f"{served.base}{path}")
        page.wait_for_selector(f"{READY} [data-view={view}]")
        assert page.url == f"{served.base}{route}"


def test_every_portfolio_figure_is_the_apis(watched: Watched, served: Served) -> None:
    sign_in(watched, served)
    page = watched.page
    # The default window is the last year, and says so.
    pressed = page.locator("[role=group][aria-label=Window] button[aria-pressed=true]")
    assert pressed.all_text_contents() == ["1 year"]
    for window, by, choose in [
        ("1yr", "month", None),
        ("all", "month", "All time"),
        ("all", "quarter", "By quarter"),
        ("3yr", "quarter", "3 years"),
    ]:
        if choose:
            page.click(f"button:text-is('{choose}')")
            wait_for(watched, f"[data-window='{window}']")
        expected = {
            **roi_figures(served.api("/roi", window=window)),
            **breakdown_figures(served, by, window=window),
            **breakdown_figures(served, "initiative", window=window),
            **breakdown_figures(served, "vendor", window=window),
            # SEMANTICS R37 by=value_status: the value still in review, apart from approved.
            ("value_status.awaiting", None): awaiting_value(served, window),
        }
        figures = shown(watched, window, "[data-view=portfolio]")
        # Every figure shown is the API's, and every one of the API's is shown.
        assert figures == expected
        assert len(figures) > 50
    # Amounts are in the account's currency, shown to the cent.
    roi = served.api("/roi", window="3yr")
    net = page.locator("[data-figure='roi.net_value_cents']")
    assert net.text_content() == dollars(roi["net_value_cents"], "0.01")


def amount(text: str) -> int:
    """The cents of an amount as the page shows it ("$1,234.05", "-$0.39")."""
    match = re.fullmatch(r"([-\u2212]?)\$([\d,]+)\.(\d\d)", text.strip())
    assert match, f"{text!r} is not an amount to the cent"
    cents = int(match.group(2).replace(",", "")) * 100 + int(match.group(3))
    return -cents if match.group(1) else cents


def shown_cents(text: str) -> int | None:
    """The cents of an amount in any currency as the page shows it ("€1,234.05",
    "-$0.39"); None for a cell without one ("—")."""
    match = re.fullmatch(r"([-\u2212]?)[^\d\s-]*([\d,]+)\.(\d\d)", text.strip())
    if match is None:
        return None
    cents = int(match.group(2).replace(",", "")) * 100 + int(match.group(3))
    return -cents if match.group(1) else cents


READ_AMOUNTS = """
(rows, names) => rows.map(row => names.map(name =>
  row.querySelector(`[data-figure$='.${name}']`)?.textContent ?? null))
"""


def test_the_portfolio_adds_up_as_shown(watched: Watched, served: Served) -> None:
    # Each figure was rounded to whole dollars on its own: approved value $644,805 less total
    # cost $367,245 read as net $277,561, and capex and opex, the vendors and the initiatives
    # added up to $367,244. Read here as text, as a person would add them up.
    sign_in(watched, served)
    page = watched.page
    for window, choose in [("1yr", None), ("3yr", "3 years"), ("all", "All time")]:
        if choose:
            page.click(f"[aria-label=Window] button:text-is('{choose}')")
            wait_for(watched, f".cards[data-window='{window}']")

        def card(figure: str) -> int:
            return amount(page.inner_text(f".cards [data-figure='roi.{figure}']"))

        value, cost, net = (
            card("approved_value_cents"),
            card("total_cost_cents"),
            card("net_value_cents"),
        )
        capex, opex = card("cost.capex_cents"), card("cost.opex_cents")
        assert cost > 0 and value > 0, window
        assert net == value - cost, window
        assert capex + opex == cost, window

        def rows(selector: str, *names: str) -> list[list[int]]:
            read = page.eval_on_selector_all(selector, READ_AMOUNTS, list(names))
            assert read, selector
            return [[amount(text) for text in row] for row in read]

        vendors = rows(
            "section[aria-labelledby=s-cost-by-vendor] tbody tr",
            "capex_cents",
            "opex_cents",
            "total_cost_cents",
        )
        assert all(c + o == t for c, o, t in vendors), window
        assert sum(row[0] for row in vendors) == capex, window
        assert sum(row[1] for row in vendors) == opex, window
        assert sum(row[2] for row in vendors) == cost, window
        initiatives = rows(
            "table.ranked tbody tr", "approved_value_cents", "total_cost_cents", "net_value_cents"
        )
        assert all(v - c == n for v, c, n in initiatives), window
        assert sum(row[0] for row in initiatives) == value, window
        assert sum(row[1] for row in initiatives) == cost, window
        assert sum(row[2] for row in initiatives) == net, window
        periods = rows(
            "section[aria-labelledby=s-value-against-cost] details tbody tr",
            "approved_value_cents",
            "capex_cents",
            "opex_cents",
            "total_cost_cents",
            "net_value_cents",
        )
        assert all(v - t == n and c + o == t for v, c, o, t, n in periods), window
        assert [sum(column) for column in zip(*periods, strict=True)] == [
            value,
            capex,
            opex,
            cost,
            net,
        ], window


def test_every_percentage_has_one_decimal(watched: Watched, served: Served) -> None:
    # "25%" beside "30.1%" read as if one were rounded and the other not.
    sign_in(watched, served)
    page = watched.page
    roi = served.api("/roi", window="1yr")["roi"]
    expected = (Decimal(str(roi)) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    assert page.inner_text("[data-figure='roi.roi']") == f"{expected:,}%"
    for route, view in [("#/", "portfolio"), ("#/budgets", "budgets")]:
        page.evaluate(f"location.hash = {route!r}")
        page.wait_for_selector(f"{READY} [data-view={view}]")
        shown = re.findall(r"[-\u2212]?[\d,.]+%", page.inner_text("#view"))
        assert shown, view
        assert [text for text in shown if not re.fullmatch(r"[-\u2212]?[\d,]*\d\.\d%", text)] == []


def test_the_ranking_is_by_net_value_then_by_roi(watched: Watched, served: Served) -> None:
    sign_in(watched, served)
    rows = served.rows("/roi/breakdown", by="initiative", window="1yr")
    titles = watched.page.locator("table.ranked tbody th a")
    by_net = sorted(rows, key=lambda row: -row["net_value_cents"])
    assert titles.all_text_contents() == [row["label"] for row in by_net]
    watched.page.click("button:text-is('By ROI')")
    wait_for(watched, "table.ranked")
    with_roi = sorted((row for row in rows if row["roi"] is not None), key=lambda row: -row["roi"])
    assert titles.all_text_contents()[: len(with_roi)] == [row["label"] for row in with_roi]
    # Each carries the stage the initiatives list gives it.
    stages = {
        row["title"]: row["stage"] for row in served.rows("/initiatives", include_sample="true")
    }
    first = watched.page.locator("table.ranked tbody tr").first
    assert (
        first.locator(".badge").get_attribute("class")
        == f"badge stage-{stages[with_roi[0]['label']]}"
    )


def test_an_initiative_shows_its_case_budget_burn_and_decisions(
    watched: Watched, served: Served
) -> None:
    sign_in(watched, served)
    page = watched.page
    # The one with the most decisions, reached from the portfolio's ranking.
    decisions = served.rows("/decisions")
    counts: dict[int, int] = {}
    for decision in decisions:
        if decision["initiative_id"] is not None:
            counts[decision["initiative_id"]] = counts.get(decision["initiative_id"], 0) + 1
    ranked = {row["key"] for row in served.rows("/roi/breakdown", by="initiative", window="1yr")}
    chosen = max(ranked & set(counts), key=lambda key: (counts[key], key))
    page.click(f"table.ranked a[href='#/initiatives/{chosen}']")
    wait_for(watched, "[data-view=initiative]")
    assert page.url.endswith(f"#/initiatives/{chosen}")

    initiative = served.api(f"/initiatives/{chosen}")
    assert page.locator("#view h1").text_content() == initiative["title"]
    figures = {(item["figure"], item["key"]): item for item in watched.figures()}
    # The business case against actuals, as its GET /business_cases row has it (R43-R45).
    (case,) = served.rows("/business_cases", initiative_id=chosen, include_sample="true")
    assert case["has_business_case"]
    case_shown = {k[0]: v for k, v in figures.items() if k[0].startswith("business_cases.")}
    assert len(case_shown) == 12
    for figure, item in case_shown.items():
        assert item["cents"] == str(case[figure.removeprefix("business_cases.")]), figure
    for name in ("expected_cost_savings_cents", "expected_revenue_uplift_cents"):
        assert figures[(f"initiative.{name}", None)]["cents"] == str(initiative[name] or 0)
    # As shown, the plan and the actuals each add up: capex + opex = cost, value - cost = net.
    block = "section[data-plan=case]"
    table_rows = [
        [shown_cents(text) for text in row]
        for row in page.eval_on_selector_all(
            f"{block} tbody tr",
            "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.innerText))",
        )
    ]
    capex, opex, cost, value, net = table_rows[:5]
    for column in (0, 2):
        assert capex[column] + opex[column] == cost[column]
        assert value[column] - cost[column] == net[column]
    ratio = page.inner_text(f"{block} [data-figure='business_cases.value_realization_ratio']")
    expected_ratio = Decimal(str(case["value_realization_ratio"])) * 100
    assert f"{expected_ratio.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}%" in ratio
    payback = page.inner_text(f"{block} [data-figure='business_cases.payback_month']")
    if case["payback_month"] is None:
        assert payback.startswith("Not paid back")
    else:
        paid = date.fromisoformat(case["payback_month"])
        assert payback.startswith(f"Paid back in {paid:%B} {paid.year}")
    # The value still in review over the window, apart from the approved value.
    assert figures[("value_status.awaiting", None)]["cents"] == awaiting_value(
        served, "1yr", chosen
    )
    # Against the actuals of the portfolio's window: the last year, by default.
    roi = served.api("/roi", initiative_id=chosen, window="1yr")
    for key, cents in roi_figures(roi).items():
        assert figures[key]["cents"] == cents
        assert figures[key]["window"] == "1yr"
    # The budget row.
    (budget,) = served.rows("/budgets", initiative_id=chosen, include_sample="true")
    budget_shown = {k[0]: v for k, v in figures.items() if k[0].startswith("budgets.")}
    assert len(budget_shown) >= 8
    for figure, item in budget_shown.items():
        assert item["cents"] == str(budget[figure.removeprefix("budgets.")]), figure
    assert page.get_attribute(".badge[data-status]", "data-status") == budget["status"]
    # Where the fiscal year lands at this pace (SEMANTICS R46), over or under by how much.
    projected = page.get_attribute("[data-projection]", "data-projection")
    assert projected == (budget["projected_fiscal_year_status"] or "none")
    variance = budget["projected_fiscal_year_variance_cents"]
    if variance:
        words = page.inner_text("[data-projection]")
        assert words.endswith(" over." if variance < 0 else " under."), words
        assert figures[("projection.gap", None)]["cents"] == str(abs(variance))
    # Its monthly burn over the last year, month by month, and the chart drawn from it.
    months = breakdown_figures(served, "month", initiative_id=chosen, window="1yr")
    burn = {k: v for k, v in figures.items() if k[0].startswith("breakdown.month.")}
    assert {k: v["cents"] for k, v in burn.items()} == {
        k: v
        for k, v in months.items()
        if k[0].split(".")[-1] in ("capex_cents", "opex_cents", "total_cost_cents")
    }
    assert all(item["window"] == "1yr" for item in burn.values())
    assert page.locator(".burn .uplot canvas").count() == 1
    # Its decisions, latest first, five at most.
    mine = sorted(
        (d for d in decisions if d["initiative_id"] == chosen),
        key=lambda d: d["decided_at"] or "",
        reverse=True,
    )
    listed = page.locator("ol.decisions > li")
    assert listed.count() == min(5, len(mine)) > 0
    assert listed.first.locator("p").first.text_content() == mine[0]["rationale"]


def test_an_initiative_is_shown_over_the_window_chosen_and_says_which(
    watched: Watched, served: Served
) -> None:
    # Its actuals were of all time, beside a portfolio of the last 12 months, without a word.
    sign_in(watched, served)
    page = watched.page
    spans = {
        window: {
            row["key"]: row["total_cost_cents"]
            for row in served.rows("/roi/breakdown", by="initiative", window=window)
        }
        for window in ("1yr", "3yr", "all")
    }
    # One whose cost differs from window to window, so that a window not followed shows.
    chosen = next(
        key
        for key, cost in spans["1yr"].items()
        if len({cost, spans["3yr"][key], spans["all"][key]}) == 3
    )
    page.click("[aria-label=Window] button:text-is('3 years')")
    wait_for(watched, ".cards[data-window='3yr']")
    page.click(f"table.ranked a[href='#/initiatives/{chosen}']")
    wait_for(watched, "[data-view=initiative]")
    pressed = "[role=group][aria-label=Window] button[aria-pressed=true]"
    for window, choose in [
        ("3yr", None),
        ("all", "All time"),
        ("5yr", "5 years"),
        ("1yr", "1 year"),
    ]:
        if choose:
            page.click(f"[aria-label=Window] button:text-is('{choose}')")
            wait_for(watched, f"[data-view=initiative] section[data-window='{window}']")
            # The choice keeps the focus, as on the portfolio.
            assert page.evaluate("document.activeElement.textContent") == choose
        assert page.locator(pressed).all_text_contents() == [dict(WINDOWS_SHOWN)[window]]
        roi = served.api("/roi", initiative_id=chosen, window=window)
        shown_figures = {
            (item["figure"], item["key"]): item
            for item in watched.figures()
            if item["figure"].startswith("roi.")
        }
        assert {key: item["cents"] for key, item in shown_figures.items()} == roi_figures(roi)
        assert {item["window"] for item in shown_figures.values()} == {window}
        # It says which window, in words and by its dates.
        period = roi["period"]
        words = period["label"]
        if window != "all":
            words += f" ({long_day(period['from'])} – {long_day(period['through'])})"
        assert page.inner_text("#view .view-head [data-window]") == f"Actual figures: {words}"
        actual = page.inner_text(f"[data-view=initiative] section[data-window='{window}']")
        assert words in actual and f"Actual figures, {period['label'].lower()}" in actual
    # The portfolio keeps the window chosen last.
    page.click("#nav a:text-is('Portfolio')")
    wait_for(watched, ".cards[data-window='1yr']")


WINDOWS_SHOWN = [("1yr", "1 year"), ("3yr", "3 years"), ("5yr", "5 years"), ("all", "All time")]


def long_day(iso: str) -> str:
    """A date as the page shows it in en-US ("Nov 26, 2026")."""
    shown = date.fromisoformat(iso)
    return f"{shown:%b} {shown.day}, {shown.year}"


def test_the_budgets_overview_keeps_each_status_apart(watched: Watched, served: Served) -> None:
    sign_in(watched, served)
    page = watched.page
    page.click("#nav a:text-is('Budgets')")
    wait_for(watched, "[data-view=budgets]")
    budgets = served.rows("/budgets")
    assert {row["status"] for row in budgets} == {"over", "within", "scheduled", "no_budget"}
    for status in ("over", "within", "scheduled", "no_budget"):
        listed = page.eval_on_selector_all(
            f"section[data-status={status}] [data-initiative]",
            "els => els.map(e => Number(e.dataset.initiative))",
        )
        assert sorted(listed) == sorted(
            r["initiative_id"] for r in budgets if r["status"] == status
        )
    by_id = {row["initiative_id"]: row for row in budgets}
    # Each row's figures (the totals by currency apart: test_budget_totals_are_kept_by_currency).
    shown_figures = [f for f in watched.figures() if not f["figure"].startswith("budgets.total.")]
    assert len(shown_figures) == 3 * sum(row["status"] != "no_budget" for row in budgets)
    for item in shown_figures:
        row = by_id[int(item["key"])]
        assert item["cents"] == str(row[item["figure"].removeprefix("budgets.")]), item
    # An over-budget initiative opens on its own view, with its status.
    over = next(row for row in budgets if row["status"] == "over")
    page.click(f"section[data-status=over] a[href='#/initiatives/{over['initiative_id']}']")
    wait_for(watched, "[data-view=initiative]")
    assert page.get_attribute(".badge[data-status]", "data-status") == "over"
    # Its burn is drawn against the budget's monthly rate when both are in one currency, and
    # a budget kept in another currency is not drawn against spend in the account's.
    account = served.api("/roi")["currency"]
    legend = page.locator(".burn .u-legend")
    assert over["currency"] == account
    assert "Budgeted monthly rate" in (legend.text_content() or "")
    foreign = next(r for r in budgets if r["budgeted"] and r["currency"] != account)
    page.evaluate("id => { location.hash = `#/initiatives/${id}`; }", foreign["initiative_id"])
    wait_for(watched, f"[data-view=initiative] h1:text-is({by_title(served, foreign)!r})")
    assert "Budgeted monthly rate" not in (legend.text_content() or "")
    assert page.is_visible(f"text=the budget is kept in {foreign['currency']}")


def test_budget_totals_are_kept_by_currency(watched: Watched, served: Served) -> None:
    # Budgets kept in several currencies: a total per currency, a line each, saying which.
    sign_in(watched, served)
    page = watched.page
    page.click("#nav a:text-is('Budgets')")
    wait_for(watched, "[data-view=budgets]")
    account = served.api("/roi")["currency"]
    budgets = [row for row in served.rows("/budgets") if row["budgeted"]]
    fields = ("budget_to_date_cents", "actual_to_date_cents", "variance_cents")
    several = False
    for scope in ("all", "over", "within", "scheduled"):
        sums: dict[str, list[int]] = {}
        for row in budgets:
            if scope in ("all", row["status"]):
                line = sums.setdefault(row["currency"] or account, [0, 0, 0])
                for index, name in enumerate(fields):
                    line[index] += row[name]
        several = several or len(sums) > 1
        lines = page.eval_on_selector_all(
            f"section[data-status={scope}] tr[data-currency]",
            """rows => rows.map(r => ({
                currency: r.dataset.currency,
                label: r.querySelector('th').textContent,
                figures: [...r.querySelectorAll('[data-cents]')].map(e =>
                    [e.dataset.figure, e.dataset.key, e.dataset.cents, e.textContent]),
            }))""",
        )
        assert [line["currency"] for line in lines] == sorted(sums), scope
        for line in lines:
            currency = line["currency"]
            assert line["label"] == f"Total in {currency}"
            expected = sums[currency]
            assert [f[:3] for f in line["figures"]] == [
                [f"budgets.total.{name}", f"{scope}:{currency}", str(expected[index])]
                for index, name in enumerate(fields)
            ]
            # Shown to the cent, in that currency's own format.
            for (_, _, _cents, text), total in zip(line["figures"], expected, strict=True):
                assert re.sub(r"[^\d.\-\u2212]", "", text).replace("\u2212", "-") == (
                    f"{'-' if total < 0 else ''}{abs(total) // 100}.{abs(total) % 100:02d}"
                ), text
    assert several, "the demo keeps budgets in one currency only"
    currencies = sorted({row["currency"] or account for row in budgets})
    assert f"Totals are kept apart by currency ({', '.join(currencies)})." in page.inner_text(
        "#view .view-head"
    )


def by_title(served: Served, budget: dict[str, Any]) -> str:
    return str(served.api(f"/initiatives/{budget['initiative_id']}")["title"])


def stopped(row: dict[str, Any], today: str) -> bool:
    """Data has stopped arriving: syncs failing, a person must reconnect, or nothing for more
    than 7 days while not paused on purpose (docs/dashboard.md)."""
    if row["status"] == "error" or row["reauth_required_at"]:
        return True
    since = date.fromisoformat((row["last_synced_at"] or row["created_at"])[:10])
    return row["status"] != "paused" and (date.fromisoformat(today) - since).days > 7


def attention_shown(watch: Watched) -> dict[int, str | None]:
    """Each connection needing attention, with the cents of the spend it carried."""
    listed = watch.page.eval_on_selector_all(
        "[data-attention] li[data-integration]",
        """els => els.map(e => [Number(e.dataset.integration),
            e.querySelector('[data-cents]')?.dataset.cents ?? null])""",
    )
    shown = {int(id_): cents for id_, cents in listed}
    assert len(shown) == len(listed)
    return shown


def test_connections_needing_attention_are_those_whose_data_stopped(
    watched: Watched, served: Served
) -> None:
    sign_in(watched, served)
    page = watched.page
    # The portfolio's notice counts them.
    integrations = served.rows("/integrations")
    attention = {row["id"] for row in integrations if stopped(row, TODAY)}
    by_id = {row["id"]: row for row in integrations}
    notice = page.inner_text(".notice")
    assert notice.startswith(f"{len(attention)} connections need attention"), notice
    page.click("#nav a:text-is('Connections')")
    wait_for(watched, "[data-view=connections]")
    # In error, to reconnect, and disconnected with nothing for two months; not the one
    # paused on purpose, though nothing came from it for weeks.
    assert {by_id[i]["status"] for i in attention} == {"error", "disconnected"}
    paused = next(row for row in integrations if row["status"] == "paused")
    assert not stopped(paused, TODAY) and stopped({**paused, "status": "active"}, TODAY)
    assert attention != {row["id"] for row in integrations}
    # The spend each carried: the cost entries it brought in, in the account's currency.
    spend: dict[int, int] = {}
    for entry in served.rows("/cost_entries"):
        connection = entry["source"]["connection_id"] if entry["source"] else None
        if connection is not None:
            spend[connection] = spend.get(connection, 0) + (entry["account_amount_cents"] or 0)
    assert attention_shown(watched) == {
        i: (str(spend[i]) if i in spend else None) for i in attention
    }
    assert any(spend.get(i) for i in attention)
    together = page.get_attribute("[data-key=attention]", "data-cents")
    assert together == str(sum(spend.get(i, 0) for i in attention))
    others = page.eval_on_selector_all(
        "tr[data-integration]", "els => els.map(e => Number(e.dataset.integration))"
    )
    assert set(others) == {row["id"] for row in integrations} - attention


def test_the_spend_a_stopped_connection_carried_worked_out_by_hand(
    watched: Watched, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'stopped.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account(name="Stopped", currency="USD")
    secret = b.token(b.user(account, role="owner"))
    b.fx_rate(account, "EUR", "1.1000", "2026-01-01")
    initiative = b.initiative(account)

    def connection(platform: str, status: str, synced: str | None, **fields: Any) -> int:
        return b.integration(
            account,
            platform=platform,
            name=f"{platform} <b>{status}</b>",
            status=status,
            last_synced_at=synced,
            created_at="2026-01-05T09:00:00Z",
            **fields,
        )

    # Today is 2026-06-15: more than 7 days without data is 2026-06-07 or before.
    fresh = connection("openai", "active", "2026-06-14T23:00:00Z")
    week = connection("anthropic", "active", "2026-06-08T01:00:00Z")  # 7 days: not yet
    quiet = connection("focus", "active", "2026-06-05T12:00:00Z")  # 10 days
    paused = connection("salesforce", "paused", "2026-05-01T12:00:00Z")  # on purpose
    gone = connection("aws", "disconnected", "2026-05-20T12:00:00Z")  # 26 days
    failing = connection("snowflake", "error", "2026-06-14T05:00:00Z")
    refused = connection(
        "zendesk", "active", "2026-06-14T05:00:00Z", reauth_required_at="2026-06-14T06:00:00Z"
    )
    never = connection("slack", "active", None)  # nothing since 2026-01-05

    def cost(connection_id: int, cents: int | None, ref: str, **fields: Any) -> None:
        b.cost_entry(
            initiative,
            amount_cents=cents,
            period_start="2026-05-01",
            source={"type": "connection", "ref": ref, "connection_id": connection_id},
            **fields,
        )

    cost(quiet, 125_000, "q1")  # $1,250.00
    cost(quiet, 4_999, "q2")  # $49.99
    cost(quiet, -1_000, "q3")  # a $10.00 credit
    cost(quiet, None, "q4")  # adds nothing
    cost(gone, 30_010, "g1", currency="EUR")  # €300.10 at 1.1: $330.11
    cost(fresh, 99_999, "f1")  # not stopped: not shown
    cost(paused, 77_700, "p1")  # paused on purpose: not shown
    b.cost_entry(initiative, amount_cents=55_500, period_start="2026-05-01")  # by hand
    b.load(engine)
    engine.dispose()
    store = RunningServer(Settings(database_url=url, today=date(2026, 6, 15)))
    try:
        watched.other_server = f"127.0.0.1:{store.port}"
        page = watched.page
        page.goto(f"{store.base_url}/#token={secret}")
        page.wait_for_selector(READY)
        assert page.inner_text(".notice").startswith("5 connections need attention")
        page.evaluate("location.hash = '#/connections'")
        page.wait_for_selector(f"{READY} [data-view=connections]")
        # $1,250.00 + $49.99 - $10.00 = $1,289.99; €300.10 x 1.1 = $330.11.
        assert attention_shown(watched) == {
            quiet: "128999",
            gone: "33011",
            failing: None,
            refused: None,
            never: None,
        }
        assert week not in attention_shown(watched) and paused not in attention_shown(watched)
        item = page.inner_text(f"[data-attention] li[data-integration='{quiet}']")
        assert (
            "Spend it carried: $1,289.99 in 4 cost entries, the latest dated May 1, 2026." in item
        )
        assert "It is active, yet no data has arrived for 10 days (since Jun 5, 2026)." in item
        # Stored text stays text.
        assert "focus <b>active</b>" in item
        item = page.inner_text(f"[data-attention] li[data-integration='{gone}']")
        assert "Spend it carried: $330.11 in 1 cost entry" in item
        assert "It was disconnected, and no data has arrived for 26 days" in item
        assert "It brought in no cost entries." in page.inner_text(
            f"[data-attention] li[data-integration='{failing}']"
        )
        assert "since it was connected on Jan 5, 2026" in page.inner_text(
            f"[data-attention] li[data-integration='{never}']"
        )
        # $1,289.99 + $330.11 = $1,620.10.
        assert page.inner_text("[data-attention] .together") == "Together they carried $1,620.10."
    finally:
        store.stop()


def test_the_walk_for_a_connections_spend_is_bounded_and_says_so(
    watched: Watched, tmp_path: Path
) -> None:
    # The API has no cost per connection: the view reads at most 20 pages of 500 entries.
    url = f"sqlite:///{tmp_path / 'many.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account(name="Many", currency="USD")
    secret = b.token(b.user(account, role="owner"))
    initiative = b.initiative(account)
    quiet = b.integration(
        account, platform="focus", status="active", last_synced_at="2026-05-01T00:00:00Z"
    )
    for number in range(10_001):  # a cent each, one more than is read
        b.cost_entry(
            initiative,
            amount_cents=1,
            period_start="2026-04-01",
            source={"type": "import", "ref": f"row-{number}", "connection_id": quiet},
        )
    b.load(engine)
    engine.dispose()
    store = RunningServer(Settings(database_url=url, today=date(2026, 6, 15)))
    try:
        watched.other_server = f"127.0.0.1:{store.port}"
        page = watched.page
        page.goto(f"{store.base_url}/#token={secret}")
        page.wait_for_selector(READY)
        page.evaluate("location.hash = '#/connections'")
        page.wait_for_selector(f"{READY} [data-view=connections]", timeout=60_000)
        assert attention_shown(watched) == {quiet: "10000"}
        section = page.inner_text("[data-attention]")
        assert "Only the first 10000 cost entries were read: the figures are of those." in section
        assert (
            "Spend it carried, in the first 10000 cost entries read: $100.00 in 10000 cost entries"
            in section
        )
        asked = [url for url in watched.requests if "/api/v1/cost_entries" in url]
        assert len(asked) == 20
    finally:
        store.stop()


def test_a_refused_token_shows_the_apis_message(watched: Watched, served: Served) -> None:
    refused = "airoi_" + "x" * 43
    said = served.api("/roi", token=refused)["error"]["message"]
    watched.expected_errors = ("status of 401",)  # the browser logs the refused fetch itself
    watched.page.goto(f"{served.base}/#token={refused}")
    watched.page.wait_for_selector("#signin-error:not([hidden])")
    assert watched.page.text_content("#signin-error") == said
    assert watched.page.evaluate("sessionStorage.getItem('airoi.token')") is None
    assert watched.page.url == f"{served.base}/"


def test_too_many_requests_shows_the_apis_message(watched: Watched, served: Served) -> None:
    # The same store served (in this process) with a budget of 3 requests a minute per
    # token: the portfolio's first load asks for more than that.
    settings = Settings(
        database_url=served.store_url, today=date.fromisoformat(TODAY), rate_limit="3/minute"
    )
    limited = RunningServer(settings)
    try:
        watched.other_server = f"127.0.0.1:{limited.port}"
        watched.expected_errors = ("status of 429",)
        watched.page.goto(f"{limited.base_url}/#token={served.token}")
        watched.page.wait_for_selector("#alert:not([hidden])")
        shown_message = watched.page.text_content("#alert") or ""
        said = httpx.get(
            f"{limited.base_url}/api/v1/roi", headers={"Authorization": f"Bearer {served.token}"}
        )
    finally:
        limited.stop()
    assert said.status_code == 429
    # The API's sentence (only the seconds to wait may have gone down since).
    message = said.json()["error"]["message"]
    assert re.fullmatch(re.sub(r"\d+", r"\\d+", re.escape(message)), shown_message), shown_message
    # Still signed in: a 429 is not a refused token.
    assert watched.page.evaluate("sessionStorage.getItem('airoi.token')") == served.token


def test_a_plan_without_api_access_shows_the_apis_message(watched: Watched, tmp_path: Path) -> None:
    # SPEC 5.5: a good token of an account whose plan has no API access is refused 403.
    url = f"sqlite:///{tmp_path / 'no-api.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account(name="No API", api_access=False)
    secret = b.token(b.user(account, role="owner"))
    b.load(engine)
    engine.dispose()
    store = RunningServer(Settings(database_url=url))
    try:
        watched.other_server = f"127.0.0.1:{store.port}"
        watched.expected_errors = ("status of 403",)
        said = httpx.get(
            f"{store.base_url}/api/v1/roi", headers={"Authorization": f"Bearer {secret}"}
        )
        watched.page.goto(f"{store.base_url}/#token={secret}")
        watched.page.wait_for_selector("#alert:not([hidden])")
        assert said.status_code == 403
        assert watched.page.text_content("#alert") == said.json()["error"]["message"]
        # The token is good: the tab stays signed in, and shows no figure.
        assert watched.page.evaluate("sessionStorage.getItem('airoi.token')") == secret
        assert watched.figures() == []
    finally:
        store.stop()


def test_a_view_refused_shows_no_figure_of_the_view_before(
    watched: Watched, served: Served
) -> None:
    # The alert was shown above the view before, left in place: its figures read as the
    # refused view's (another initiative's, or another token's), and an old alert stayed
    # above the sign-in form.
    sign_in(watched, served)
    page = watched.page
    assert watched.figures() != []
    watched.expected_errors = ("status of 404",)
    absent = 10**15  # no initiative of the demo account: the API answers 404
    asked = [(f"/initiatives/{absent}", {}), ("/budgets", {"initiative_id": absent})]
    said = [served.api(path, token=served.token, **params)["error"] for path, params in asked]
    assert {error["status"] for error in said} == {404}
    page.evaluate(f"location.hash = '#/initiatives/{absent}'")
    page.wait_for_selector("body[data-state=error] #alert:not([hidden])")
    assert page.text_content("#alert") in {error["message"] for error in said}
    assert watched.figures() == []
    assert page.inner_text("#view") == ""
    # A link whose token cannot be read: the sign-in form says so, without the old alert.
    page.evaluate("location.hash = '#token=%zz'")
    page.wait_for_selector("#signin:not([hidden])")
    assert page.is_hidden("#alert")
    assert "could not be read" in page.inner_text("#signin-error")


def test_a_view_shows_titles_as_they_are_after_a_load(watched: Watched, tmp_path: Path) -> None:
    # The initiatives were read once a session: a title renamed by a load stayed as it was
    # in one view while another showed the new one, until the page was loaded again.
    url = f"sqlite:///{tmp_path / 'renamed.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account(name="Renamed")
    secret = b.token(b.user(account, role="owner"))
    initiative = b.initiative(account, title="Before the load")
    b.budget_version(initiative, effective_from="2026-01-01", capex_cents=100_000)
    b.load(engine)
    store = RunningServer(Settings(database_url=url))
    try:
        watched.other_server = f"127.0.0.1:{store.port}"
        page = watched.page
        page.goto(f"{store.base_url}/#token={secret}")
        page.wait_for_selector(READY)
        page.evaluate("location.hash = '#/budgets'")
        page.wait_for_selector(f"{READY} [data-view=budgets]")
        assert "Before the load" in page.inner_text("#view")
        b.data["initiatives"][0]["title"] = "After the load"
        b.load(engine)
        page.evaluate("location.hash = '#/'")
        page.wait_for_selector(f"{READY} [data-view=portfolio]")
        page.evaluate("location.hash = '#/budgets'")
        page.wait_for_selector(f"{READY} [data-view=budgets]")
        shown = page.inner_text("#view")
        assert "After the load" in shown and "Before the load" not in shown
    finally:
        store.stop()
        engine.dispose()


def test_it_is_used_with_the_keyboard_alone(watched: Watched, served: Served) -> None:
    page = watched.page
    keyboard = page.keyboard
    page.goto(f"{served.base}/")
    page.wait_for_selector("#signin:not([hidden])")
    # The form takes the token where the cursor already is, and Enter signs in.
    assert page.evaluate("document.activeElement.id") == "token"
    keyboard.type(served.token)
    keyboard.press("Enter")
    page.wait_for_selector(f"{READY} [data-view=portfolio]")

    def tab_to(text: str, key: str = "Tab", limit: int = 40) -> None:
        for _ in range(limit):
            keyboard.press(key)
            if page.evaluate("document.activeElement.textContent.trim()") == text:
                # The focus is visible where it is.
                outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
                assert outline not in ("", "none")
                return
        raise AssertionError(f"{text!r} is not reached with Tab")

    tab_to("All time")
    keyboard.press("Enter")
    page.wait_for_selector(f"{READY} [data-window=all]")
    # The choice keeps the focus; back from there to the views' links.
    assert page.evaluate("document.activeElement.textContent") == "All time"
    tab_to("Budgets", "Shift+Tab")
    keyboard.press("Enter")
    page.wait_for_selector(f"{READY} [data-view=budgets]")
    # After a view changes, the reader starts at its content.
    assert page.evaluate("document.activeElement.id") == "main"
    tab_to("Sign out", "Shift+Tab")
    keyboard.press("Enter")
    page.wait_for_selector("#signin:not([hidden])")
    assert page.evaluate("sessionStorage.getItem('airoi.token')") is None


def screenshot_folder(tmp_path: Path) -> Path:
    named = os.environ.get(SCREENSHOTS_ENV)
    return Path(named) if named else tmp_path


def test_a_phone_reads_every_view_without_sideways_scrolling(
    browser: Any, served: Served, tmp_path: Path
) -> None:
    context = browser.new_context(
        viewport={"width": 375, "height": 812},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        locale="en-US",
    )
    try:
        page = context.new_page()
        page.goto(f"{served.base}{served.link}")
        page.wait_for_selector(READY)
        for route, view in [
            ("#/", "portfolio"),
            ("#/budgets", "budgets"),
            ("#/connections", "connections"),
            (f"#/initiatives/{served.rows('/budgets')[0]['initiative_id']}", "initiative"),
        ]:
            page.evaluate(f"location.hash = {route!r}")
            page.wait_for_selector(f"{READY} [data-view={view}]")
            width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (view, width)
            if view == "portfolio":
                # The ranking keeps every figure of each initiative on screen: stage, approved
                # value and cost beside net value and ROI, each figure labelled.
                cells = page.eval_on_selector_all(
                    ".ranked tbody tr",
                    """rows => rows.map(r => [...r.children].map(c => {
                        const box = c.getBoundingClientRect();
                        return [getComputedStyle(c).display, box.left, box.right, box.width,
                                c.dataset.label || '', c.textContent];
                    }))""",
                )
                assert cells
                for row in cells:
                    assert len(row) == 7
                    for display, left, right, cell_width, _, text in row:
                        assert display != "none" and cell_width > 0, text
                        assert left >= 0 and right <= width[1], (text, left, right)
                    labels = [cell[4] for cell in row]
                    assert labels[3:] == ["Approved", "Cost", "Net", "ROI"]
            # Text no smaller than 12 px anywhere it is read.
            smallest = page.evaluate(
                "Math.min(...[...document.querySelectorAll('td, th, p, dd, dt, .card-value')]"
                ".map(e => parseFloat(getComputedStyle(e).fontSize)))"
            )
            assert smallest >= 12, view
        page.evaluate("location.hash = '#/'")
        page.wait_for_selector(f"{READY} [data-view=portfolio]")
        # What a phone's screen shows first, at its pixel density.
        path = screenshot_folder(tmp_path) / "dashboard-phone.png"
        page.screenshot(path=str(path))
        assert 10_000 < path.stat().st_size < 400_000
    finally:
        context.close()


def test_the_screenshot_at_1280(watched: Watched, served: Served, tmp_path: Path) -> None:
    sign_in(watched, served)
    # The chart is drawn: a canvas as wide as its block.
    width = watched.page.evaluate("document.querySelector('.chart canvas').clientWidth")
    assert width > 600
    path = screenshot_folder(tmp_path) / "dashboard.png"
    watched.page.screenshot(path=str(path), full_page=True)
    assert 10_000 < path.stat().st_size < 400_000


def test_text_from_the_data_stays_in_its_place_and_no_figure_reads_minus_zero(
    watched: Watched, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'edges.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account(name="Edges", currency="USD")
    owner = b.user(account, role="owner", name="\u202eMaya Admin")  # a right-to-left override
    secret = b.token(owner)
    long_title = "x" * 400  # one word wider than any screen
    initiative = b.initiative(account, title=long_title, owner_id=owner, category="Finance")
    # Net value 10 - 49 = -39 cents: -$0.39, shown as it is (once rounded to "$0").
    b.cost_entry(initiative, amount_cents=49, period_start="2026-01-01")
    b.value_entry(initiative, amount_cents=10, period_start="2026-01-01")
    b.load(engine)
    engine.dispose()
    store = RunningServer(Settings(database_url=url, today=date(2026, 6, 15)))
    try:
        watched.other_server = f"127.0.0.1:{store.port}"
        page = watched.page
        page.goto(f"{store.base_url}/#token={secret}")
        page.wait_for_selector(READY)
        net = [f for f in watched.figures() if f["figure"] == "roi.net_value_cents"]
        assert net and all(f["cents"] == "-39" for f in net)
        assert {f["text"] for f in net} == {"-$0.39"}
        # The ranking keeps its figures in view: the long title breaks inside its cell.
        wrap = page.eval_on_selector(
            "table.ranked",
            "t => [t.closest('.table-wrap').scrollWidth, t.closest('.table-wrap').clientWidth]",
        )
        assert wrap[0] <= wrap[1], wrap
        page.goto(f"{store.base_url}/#/initiatives/{initiative}")
        page.wait_for_selector(f"{READY} [data-view=initiative]")
        # The owner's name and the category each in an element of its own, isolated: the
        # override reorders the name alone.
        isolated = page.eval_on_selector_all(
            "#view .view-head bdi",
            "els => els.map(e => [e.textContent, getComputedStyle(e).unicodeBidi])",
        )
        assert isolated == [["\u202eMaya Admin", "isolate"], ["Finance", "isolate"]]
    finally:
        store.stop()


# --- accessibility: axe-core ------------------------------------------------------------

# axe-core's axe.min.js, from npm at a pinned version (`.ci/run` installs it and sets this).
AXE_ENV = "AIROI_TEST_AXE"


@pytest.fixture(scope="module")
def axe() -> Path:
    """axe.min.js; asked for before the browser and the server, so a skip costs nothing."""
    named = os.environ.get(AXE_ENV, "")
    if not named or not Path(named).is_file():
        _unavailable(
            f"no axe-core: set {AXE_ENV} to axe.min.js of axe-core@4.10.3 from npm "
            "(`.ci/run` installs it)"
        )
    return Path(named)


def axe_violations(page: Any, script: Path) -> list[str]:
    """axe-core's violations on the page as it is, every <details> opened first."""
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(script))
    found = page.evaluate(
        """async () => (await axe.run(document)).violations.map(v =>
            `${v.id} (${v.impact}): ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)"""
    )
    return list(found)


@pytest.mark.parametrize("width", [1280, 375])
def test_no_view_has_an_axe_violation(axe: Path, browser: Any, served: Served, width: int) -> None:
    script = axe
    phone = width < 600
    context = browser.new_context(
        viewport={"width": width, "height": 812 if phone else 900},
        is_mobile=phone,
        has_touch=phone,
        locale="en-US",
        # axe.min.js is injected as a script of the page: the policy would refuse it.
        bypass_csp=True,
    )
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        found: dict[str, list[str]] = {}
        page.goto(f"{served.base}/")
        page.wait_for_selector("#signin:not([hidden])")
        found["sign-in"] = axe_violations(page, script)
        page.goto(f"{served.base}{served.link}")
        page.wait_for_selector(READY)
        initiative = served.rows("/budgets")[0]["initiative_id"]
        for route, view in [
            ("#/", "portfolio"),
            (f"#/initiatives/{initiative}", "initiative"),
            ("#/budgets", "budgets"),
            ("#/connections", "connections"),
        ]:
            page.evaluate(f"location.hash = {route!r}")
            page.wait_for_selector(f"{READY} [data-view={view}]")
            found[view] = axe_violations(page, script)
        print({view: len(items) for view, items in found.items()})
        assert {view: items for view, items in found.items() if items} == {}
    finally:
        context.close()
