"""`airoi pull` and `airoi verify`: the commands that make a copy of an account and check one
against the service (airoi.client.pull, airoi.client.verify), registered by airoi.cli.

Only typer, rich and the standard library are imported here: the client's packages, and the
pull extra's (duckdb, pyarrow), are imported when a command runs, after checking that the
extra is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.progress import BarColumn, Progress
from rich.table import Column, Table

from airoi.terminal import (
    PULL_PACKAGES,
    BaseUrl,
    BearerToken,
    ctrl_c_noted,
    err,
    out,
    require_extra,
    say,
)

if TYPE_CHECKING:  # the pull extra's (duckdb), imported by `verify` when it runs
    from airoi.client.verify import Verification


def _store_failed(store: Path, exc: Exception) -> NoReturn:
    """The store, not the service, stopped a pull: a file another process holds, a disk
    that is full. Exit status 1."""
    err.print(
        f"Pull stopped: the store at {store} could not be written ({type(exc).__name__}: "
        f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}). What was written "
        "before stays; run again to go on.",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(1) from None


def _say_nothing(seconds: float, why: Exception) -> None:
    """`pull --quiet`: a wait that ends in an answer is not a failure, so nothing is said."""


def _say_wait(seconds: float, why: Exception) -> None:
    """A wait (a 429's Retry-After, a 503, no answer) is said, not left to look like a hang."""
    err.print(
        f"Waiting {seconds:.1f} s before asking again: {why}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def pull(
    base_url: BaseUrl,
    token: BearerToken,
    to_text: Annotated[
        str,
        typer.Option(
            "--to",
            help="A .duckdb file, or a directory (a name without extension) for parquet or csv.",
        ),
    ],
    format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="duckdb, parquet or csv (default: duckdb for a .duckdb or .db file, else "
            "parquet, or csv for a directory that holds csv files).",
        ),
    ] = None,
    resources: Annotated[
        str | None,
        typer.Option(
            "--resources",
            help="Only these lists, comma-separated (for example cost_entries,budgets).",
        ),
    ] = None,
    full_refresh: Annotated[
        bool,
        typer.Option(
            "--full-refresh",
            help="Start over: each list pulled drops its stored rows and position and is read "
            "whole again.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress or summary; errors are still printed."),
    ] = False,
) -> None:
    """Pull every list resource of the account into DuckDB, Parquet or CSV, incrementally.

    Each run asks only for rows changed since the last one, upserts them by id and removes
    the rows deleted since; an interrupted run resumes where it stopped. A pull refused
    before its first write (a bad target, token or address) creates nothing. Needs the pull
    extra (duckdb and pyarrow).
    """
    import time

    require_extra("pull", PULL_PACKAGES, "pull")

    import duckdb
    from rich.progress import MofNCompleteColumn, SpinnerColumn, TextColumn

    from airoi.client import AiroiError, Client
    from airoi.client.copies.lists import DELETIONS
    from airoi.client.copies.targets import check_target, format_for
    from airoi.client.pull import choose_resources, walks
    from airoi.client.pull import pull as run_pull

    # Read as text: a Path makes "" (a variable left unset) and "." (here) the same.
    if not to_text.strip():
        say("--to names no target: give a .duckdb file or a directory for the copy.", console=err)
        raise typer.Exit(2)
    to = Path(to_text)
    try:
        fmt = format_for(to, format_)
        chosen = choose_resources(resources)
        check_target(to, fmt)
    except ValueError as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except duckdb.Error as exc:  # another process holds the file (a pull, a notebook)
        _store_failed(to, exc)
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<14}"),
        MofNCompleteColumn(),
        TextColumn("rows"),
        TextColumn("{task.fields[state]}"),
    )

    started = time.perf_counter()
    try:
        # Quiet: a wait is not said at all (left to the client, it would log its first one).
        client = Client(base_url, token, on_wait=_say_nothing if quiet else _say_wait)
    except AiroiError as exc:
        err.print(f"Pull stopped: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    with client, Progress(*columns, console=err, disable=quiet) as progress:
        tasks = {name: progress.add_task(name, total=None, state="") for name in walks(chosen)}

        def advance(name: str, rows: int, done: bool) -> None:
            progress.update(tasks[name], advance=rows)
            if done:
                task = progress.tasks[tasks[name]]
                progress.update(tasks[name], total=task.completed, state="done")

        with ctrl_c_noted() as interrupted:
            try:
                reports = run_pull(
                    client,
                    to,
                    fmt,
                    resources=chosen,
                    full_refresh=full_refresh,
                    progress=advance,
                    notice=lambda line: say(line, console=err),
                )
            except BaseException as exc:
                if interrupted(exc):  # DuckDB's own error, when in a statement
                    err.print(
                        "Pull interrupted. What was written before stays; run again to go on.",
                        markup=False,
                        highlight=False,
                    )
                    raise typer.Exit(130) from None
                if isinstance(exc, AiroiError):
                    say(f"Pull stopped: {exc}", console=err)
                    raise typer.Exit(1) from None
                if isinstance(exc, duckdb.Error | OSError):
                    _store_failed(to, exc)
                raise
    if quiet:
        return
    seconds = time.perf_counter() - started
    table = Table("resource", "rows", "pages", "from")
    for report in reports:
        if report.start == "full":
            began = "(full)"
        elif report.since is None:  # budgets, resumed in the middle of their walk
            began = "(resumed)"
        else:
            began = ("after " if report.start == "cursor" else "since ") + report.since
        table.add_row(report.name, str(report.rows), str(report.pages), began)
    out.print(table)
    total = sum(report.rows for report in reports if report.name != DELETIONS)
    deletions = next((r for r in reports if r.name == DELETIONS), None)
    removed = ""
    if deletions is not None and deletions.rows:
        removed = (
            f" Removed {deletions.deleted} rows deleted on the server "
            f"({deletions.rows} deletions read)."
        )
    out.print(
        f"Pulled {total} rows into {to} ({fmt}) in {seconds:.2f} s "
        f"({total / seconds if seconds else 0:.0f} rows/s).{removed}",
        highlight=False,
    )


VERIFY_SHOWN_ROWS = 200


def _shown(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def verify(
    base_url: BaseUrl,
    token: BearerToken,
    store_text: Annotated[
        str,
        typer.Option(
            "--store",
            help="The copy airoi pull made: a .duckdb file, or its parquet or csv directory.",
        ),
    ],
    format_: Annotated[
        str | None,
        typer.Option(
            "--format", help="duckdb, parquet or csv (default: as the store's files show)."
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=16, help="Requests to the service at a time.")
    ] = 4,
    show_all: Annotated[
        bool, typer.Option("--all", help="List every figure compared, equal ones too.")
    ] = False,
    rows: Annotated[
        bool,
        typer.Option(
            "--rows",
            help="Also compare every row of each list with the service's (walks every list,"
            " as a first pull does).",
        ),
    ] = False,
    resources: Annotated[
        str | None,
        typer.Option(
            "--resources",
            help="The lists the copy was pulled with (as pull's --resources): figures only "
            "when initiatives, cost_entries and value_entries are among them; with --rows, "
            "these lists alone.",
        ),
    ] = None,
) -> None:
    """Recompute /roi and the budgets' actual figures from a pulled copy; compare with the service.

    From the copy, with DuckDB: /roi over every window (all, 1yr, 3yr, 5yr) for the portfolio
    and for each initiative, as sums of account_amount_cents by reported_on; and each budget
    row's capex_actual, opex_actual, actual_to_date, spent_before_budget, capex_remaining,
    variance and used_ratio, and the actual monthly run rate of a budget with one approved
    version. A budget row in a currency other than the account's, with spend in any other
    currency, is not checkable from a copy (the FX table is not served): it is listed, and
    not counted as a difference. Today is the service's. Exit status 0 when every figure is
    equal, 1 when any differs, 2 when the service or the store cannot be read. With --rows,
    every row of each list the copy holds is compared by id too (budgets excepted): a row
    missing, extra or different counts as a difference; one the service changed or deleted
    after the copy's last pull is counted apart. A copy pulled with --resources is verified
    with the same --resources. Needs the pull extra (duckdb).
    """
    require_extra("pull", ("duckdb",), "verify", code=2)
    # Read as text, as pull's --to: "" (a variable left unset) is not the directory here.
    if not store_text.strip():
        say(
            "--store names no copy: give the .duckdb file or the directory airoi pull made.",
            console=err,
        )
        raise typer.Exit(2)
    store = Path(store_text)

    from airoi.client.pull import choose_resources

    try:
        chosen = None if resources is None else [r.name for r in choose_resources(resources)]
    except ValueError as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None

    from rich.progress import MofNCompleteColumn, SpinnerColumn, TextColumn

    from airoi.client import AiroiError, Client
    from airoi.client.errors import CopyError
    from airoi.client.verify import Inconclusive
    from airoi.client.verify import verify as run_verify

    try:
        client = Client(base_url, token, on_wait=_say_wait)
    except AiroiError as exc:
        say(f"Verify stopped: {exc}", console=err)
        raise typer.Exit(2) from None
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
    )
    with client, Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("Asking /roi", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, description="Asking /roi", completed=done, total=total)

        def walked(name: str, read: int) -> None:
            progress.update(task, description=f"Reading {name}: {read:,} rows", total=None)

        with ctrl_c_noted() as interrupted:
            try:
                result = run_verify(
                    client,
                    store,
                    format_,
                    workers=workers,
                    progress=advance,
                    rows=rows,
                    list_progress=walked,
                    resources=chosen,
                )
            except BaseException as exc:
                if interrupted(exc):  # DuckDB's own error, when in a statement
                    say("Verify interrupted: nothing was compared.", console=err)
                    raise typer.Exit(130) from None
                if isinstance(exc, AiroiError | CopyError | Inconclusive):
                    say(f"Verify stopped: {exc}", console=err)
                    raise typer.Exit(2) from None
                raise

    for note in result.notes:
        say(f"Note: {note}")
    differences = result.differences
    listed = result.compared if show_all else differences
    if listed:
        # A figure is never cut short: in a narrow terminal its digits fold onto a second line.
        table = Table(
            Column("figure", overflow="fold"), "scope", "window",
            Column("service", overflow="fold"), Column("copy", overflow="fold"),
            Column("difference", overflow="fold"),
            title="Figures compared" if show_all else "Differences",
        )  # fmt: skip
        for compared in listed[: None if show_all else VERIFY_SHOWN_ROWS]:
            difference = compared.difference
            table.add_row(
                compared.figure,
                compared.scope,
                compared.window,
                _shown(compared.service),
                _shown(compared.copy),
                "" if compared.equal else "differs" if difference is None else f"{difference:+}",
            )
        out.print(table)
        if len(listed) > VERIFY_SHOWN_ROWS and not show_all:
            say(
                f"... and {len(listed) - VERIFY_SHOWN_ROWS} more differences"
                " (--all lists every figure)."
            )
    if result.unchecked:
        table = Table("budget row", "currency", "why", title="Not checkable from a copy")
        for unchecked in result.unchecked[:VERIFY_SHOWN_ROWS]:
            table.add_row(str(unchecked.initiative_id), unchecked.currency, unchecked.reason)
        out.print(table)
        if len(result.unchecked) > VERIFY_SHOWN_ROWS:
            say(f"... and {len(result.unchecked) - VERIFY_SHOWN_ROWS} more rows not checkable.")
    row_differences = _show_row_checks(result, show_all)
    say(
        f"Service {result.base_url} as of {result.today.isoformat()} ({result.currency}); "
        f"copy {result.store} ({result.fmt})."
    )
    if result.figures:
        say(
            f"{len(result.compared)} figures compared (the portfolio and {result.initiatives} "
            f"initiatives over 4 windows; {result.budget_rows} budget rows): "
            f"{len(differences)} differ, {len(result.unchecked)} budget rows not checkable "
            f"from a copy. {result.seconds:.2f} s, {result.requests} requests."
        )
    else:
        say(
            "Figures not compared (--resources leaves out a list they are recomputed from); "
            f"rows only. {result.seconds:.2f} s, {result.requests} requests."
        )
    if differences or row_differences:
        raise typer.Exit(1)


def _show_row_checks(result: Verification, show_all: bool) -> int:
    """verify --rows: the lists compared and the rows that differ; how many differ."""
    if result.lists is None:
        return 0
    table = Table(
        Column("list", no_wrap=True), "served", "copy", "missing", "extra", "differ",
        "changed since", "deleted since", title="Rows compared",
    )  # fmt: skip
    for check in result.lists:
        table.add_row(
            check.resource,
            f"{check.served:,}",
            f"{check.held:,}",
            f"{check.count('missing'):,}",
            f"{check.count('extra') + check.count('duplicate'):,}",
            f"{check.count('different'):,}",
            f"{check.changed_since:,}",
            f"{check.deleted_since:,}",
        )
    out.print(table)
    for check in result.lists:
        if check.not_in_copy:
            say(
                f"Note: the copy's {check.resource} have no {', '.join(check.not_in_copy)} "
                "column (pulled before the service served it, or removed from the copy): "
                "not compared."
            )
    if result.lists_not_pulled:
        say(
            "Note: not in this copy (pulled with --resources, a pull cut off before them, or "
            f"by an earlier version, empty then), so not compared: "
            f"{', '.join(result.lists_not_pulled)}."
        )
    differing = result.row_differences
    if differing:
        shown = differing if show_all else differing[:VERIFY_SHOWN_ROWS]
        table = Table("list", "id", "difference", "columns", title="Rows that differ")
        for difference in shown:
            table.add_row(
                difference.resource,
                "null" if difference.id is None else str(difference.id),
                difference.kind,
                ", ".join(difference.columns),
            )
        out.print(table)
        if len(differing) > len(shown):
            say(f"... and {len(differing) - len(shown)} more rows (--all lists every one).")
    changed = sum(c.changed_since + c.deleted_since for c in result.lists)
    say(
        f"{sum(c.held for c in result.lists):,} rows of {len(result.lists)} lists compared: "
        f"{len(differing):,} differ; {changed:,} changed or deleted in the service since the "
        "copy was pulled (pull again to bring them)."
    )
    return len(differing)
