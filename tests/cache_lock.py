"""One test process at a time in a directory under pytest's cache (`./scripts/test` runs
tests in several processes, and two runs of it may share a checkout)."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held(directory: Path, wait_s: float) -> Iterator[None]:
    """`directory`'s lock, waited for at most `wait_s` seconds (what the holder may take)."""
    deadline = time.monotonic() + wait_s
    with (directory / ".lock").open("w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{directory} stayed locked for {wait_s:g} s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
