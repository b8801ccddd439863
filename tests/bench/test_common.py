"""The benchmarks' reading of the host's steal time (bench.common)."""

from __future__ import annotations

import pytest
from bench.common import cpu_times, parse_cpu_line, steal_share


def test_steal_and_total_are_read_from_the_cpu_line() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice: guest time is in user
    # already, so the total is the first eight: 190926 + 28709 + 353262 + 2640 + 7159 + 32660.
    line = "cpu  190926 0 28709 353262 2640 0 7159 32660 1200 0\n"
    assert parse_cpu_line(line) == (32660, 615356)


def test_a_kernel_without_a_steal_column_reads_as_none_taken() -> None:
    assert parse_cpu_line("cpu  100 0 50 850 0 0 0\n") == (0, 1000)


def test_steal_share_is_none_without_a_reading_before() -> None:
    assert steal_share(None) is None


def test_steal_share_is_a_share_of_the_time_since() -> None:
    before = cpu_times()
    if before is None:
        pytest.skip("no /proc/stat on this system")
    # A reading 100 ticks earlier: the steal since is a share of at least those ticks.
    share = steal_share((before[0], before[1] - 100))
    assert share is not None
    assert 0.0 <= share <= 1.0


def test_steal_share_is_none_when_no_time_passed() -> None:
    assert steal_share((0, 10**15)) is None
