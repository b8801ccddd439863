"""A real browser for the pages the server shows: Playwright driving the system's Chromium.

No browser is downloaded: AIROI_TEST_CHROMIUM names the executable (`.ci/run` installs
Debian's `chromium` and sets it); without it `chromium` on the PATH is used. With neither,
these tests skip saying so, or fail under AIROI_TEST_REQUIRE_SERVICES=1 (as PostgreSQL's do).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import _unavailable


def chromium_path() -> str | None:
    named = os.environ.get("AIROI_TEST_CHROMIUM", "")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("chromium")


# Per module, not per session: Playwright's sync API runs an event loop in the main thread while
# it is started, and a later test's asyncio.run() (tests/test_docs.py's tool list) would fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        _unavailable(
            "no Chromium: install Debian's `chromium` or set AIROI_TEST_CHROMIUM to its path"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        try:
            yield launched
        finally:
            launched.close()
