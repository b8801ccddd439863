"""The figures `airoi verify` recomputes from a copy: the windows they are summed over."""

from __future__ import annotations

from datetime import date

import pytest

pytest.importorskip("duckdb")

from airoi.client.verify_figures import window_bounds


def test_windows_follow_r8() -> None:
    # SEMANTICS R8: today minus N years (29 February becomes 28 February), plus one day.
    assert window_bounds("all", date(2026, 6, 15)) is None
    assert window_bounds("1yr", date(2026, 6, 15)) == (date(2025, 6, 16), date(2026, 6, 15))
    assert window_bounds("1yr", date(2024, 2, 29)) == (date(2023, 3, 1), date(2024, 2, 29))
    assert window_bounds("3yr", date(2028, 2, 29)) == (date(2025, 3, 1), date(2028, 2, 29))
    assert window_bounds("5yr", date(2026, 1, 1)) == (date(2021, 1, 2), date(2026, 1, 1))
