"""The API reference at /api/v1/docs in a real browser, against `airoi serve` over the demo.

The page draws every described operation, and "Try it out" sends the token typed into
Authorize: without it the service answers 401, with it 200 and the figures /roi serves. Every
request the page makes goes to the server, no console error is logged and the
Content-Security-Policy refuses nothing. Its screenshot is docs/screenshots/api-docs.png.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import demo_served

# Written to docs/screenshots/ when AIROI_TEST_SCREENSHOTS names that folder (as the dashboard's
# test does, docs/dashboard.md); otherwise to the test's own temporary folder.
SCREENSHOTS_ENV = "AIROI_TEST_SCREENSHOTS"
SCREENSHOT_MAX_BYTES = 300_000
# Recorded before any page script runs: what the Content-Security-Policy refused.
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


@dataclass(frozen=True)
class Demo:
    base_url: str
    token: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`airoi demo` into a fresh store, then `airoi serve` on a free port."""
    with demo_served(tmp_path_factory.mktemp("docs-page")) as served:
        yield Demo(served.origin, served.token)


@dataclass
class Watched:
    page: Any
    requests: list[Any]
    problems: list[str]

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations"))


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.add_init_script(WATCH_VIOLATIONS)
    seen = Watched(page, [], [])
    # Playwright takes a function it can mark, not a list's bound built-in method.
    page.on("request", lambda request: seen.requests.append(request))  # noqa: PLW0108
    page.on("console", lambda m: m.type == "error" and seen.problems.append(m.text))
    page.on("pageerror", lambda error: seen.problems.append(str(error)))
    try:
        yield seen
    finally:
        context.close()


ROI_REQUEST = re.compile(r"/api/v1/roi(\?|$)")


def execute_roi(page: Any) -> str:
    """Try GET /api/v1/roi?window=1yr from its operation; the status the page shows."""
    operation = page.locator("#operations-ROI-getRoiSummary")
    if operation.locator(".try-out__btn.cancel").count() == 0:
        operation.locator(".opblock-summary-control").click()
        operation.locator(".try-out__btn").click()
        operation.locator('tr[data-param-name="window"] select').select_option("1yr")
    with page.expect_response(ROI_REQUEST):
        operation.locator("button.execute").click()
    status = operation.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for()
    return str(status.inner_text()).strip()


def test_the_reference_draws_every_operation_and_tries_one_with_the_token(
    watched: Watched, demo: Demo, tmp_path: Path
) -> None:
    page = watched.page
    description = httpx.get(f"{demo.base_url}/api/v1/openapi.json").json()
    described = {
        path for path, item in description["paths"].items() for method in item if method == "get"
    }

    page.goto(f"{demo.base_url}/api/v1/docs")
    page.locator(".opblock").first.wait_for()
    assert page.title() == "airoi API reference"
    shown = set(
        page.locator(".opblock-get .opblock-summary-path").evaluate_all(
            "nodes => nodes.map(node => node.dataset.path)"
        )
    )
    assert shown == described
    assert len(shown) >= 13

    # No token yet: the service's own 401 comes back and is shown (SEMANTICS R29). The
    # browser logs a refused request as an error: that one, and only it, is expected here.
    assert execute_roi(page) == "401"
    assert watched.problems == [
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)"
    ]
    watched.problems.clear()

    page.locator("button.authorize").click()
    page.locator("#auth-bearer-value").fill(demo.token)
    page.locator(".auth-container button.authorize").click()
    page.locator(".auth-container button.btn-done").click()
    with page.expect_request(ROI_REQUEST) as sent:
        assert execute_roi(page) == "200"
    assert sent.value.url == f"{demo.base_url}/api/v1/roi?window=1yr"
    assert sent.value.headers["authorization"] == f"Bearer {demo.token}"

    # The answer shown is /roi's own: its approved value, as the API serves it.
    served = httpx.get(
        f"{demo.base_url}/api/v1/roi",
        params={"window": "1yr"},
        headers={"Authorization": f"Bearer {demo.token}"},
    ).json()
    body = page.locator("#operations-ROI-getRoiSummary .live-responses-table .microlight").first
    shown_body = str(body.inner_text())
    assert f'"approved_value_cents": {served["approved_value_cents"]}' in shown_body

    assert watched.problems == []
    assert watched.violations() == []
    origins = {re.match(r"^[a-z]+://[^/]+", request.url) for request in watched.requests}
    assert {origin.group(0) if origin else None for origin in origins} == {demo.base_url}

    # The title, Authorize and the tried operation down to its answer; the curl line shown
    # carries the token, so it is masked in the picture.
    page.set_viewport_size({"width": 1280, "height": 1500})
    page.evaluate("window.scrollTo(0, 0)")
    named = os.environ.get(SCREENSHOTS_ENV)
    screenshot = (Path(named) if named else tmp_path) / "api-docs.png"
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(screenshot), mask=[page.locator(".curl-command pre")], mask_color="#333333"
    )
    assert screenshot.stat().st_size < SCREENSHOT_MAX_BYTES
