"""Progress of a list being fetched into a frame: a rich line on a terminal, else nothing."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def shown(progress: bool | None) -> bool:
    """Whether to show progress: as asked, or (None) when standard error is a terminal. A
    notebook's standard error is not one, so a notebook shows it only when asked."""
    if progress is not None:
        return progress
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


@contextmanager
def counting(resource: str, progress: bool | None) -> Iterator[Callable[[int], None]]:
    """A function to call with each page's row count; it moves a line that says the rows
    fetched so far and the time taken (the lists do not say how many rows they hold)."""
    if not shown(progress):
        yield lambda rows: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,} rows"),
        TimeElapsedColumn(),
        console=console(),
    ) as bar:
        task = bar.add_task(resource, total=None)
        yield lambda rows: bar.advance(task, rows)
