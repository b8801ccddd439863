"""`airoi import` (IMPORT.md): FOCUS bills, OpenAI's and Anthropic's cost reports, and tables
of records, into one account.

Only typer, rich and the standard library are imported here; the importers import the
server's packages (and pyarrow, openpyxl) when a command runs, after checking they are
installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from airoi.settings import DEFAULT_LOAD_WAIT_SECONDS
from airoi.terminal import (
    SERVER_PACKAGES,
    DatabaseUrl,
    LoadWait,
    err,
    out,
    require_extra,
    say,
    settings_for,
    writer_engine,
)

if TYPE_CHECKING:
    from airoi.imports.costs import CostReport

import_app = typer.Typer(
    help=(
        "Import FOCUS bills, OpenAI and Anthropic cost reports, and tables of records into one "
        "account (docs/importing.md). Each import is one load: all of it or, on any problem, "
        "nothing."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)
IMPORT_PACKAGES = ("pyarrow", "openpyxl")
# Reads a cost source: (rules, --from/--to, problems, progress) -> the rows grouped.
Read = Callable[[Any, Any, Any, Any], Any]
BUSY_EXIT = 75


class OnUnmatched(StrEnum):
    skip = "skip"
    fail = "fail"


class TableKind(StrEnum):
    initiatives = "initiatives"
    cost_entries = "cost_entries"
    value_entries = "value_entries"
    metrics = "metrics"
    observations = "observations"
    budget_versions = "budget_versions"


Account = Annotated[int, typer.Option("--account", help="Id of the account to import into.")]
RulesFile = Annotated[
    Path,
    typer.Option(
        "--rules", help="The rules file (TOML) mapping rows to initiatives.", dir_okay=False
    ),
]
Connection = Annotated[
    int | None,
    typer.Option(
        "--connection",
        help=(
            "Id of the account's connection to import under (default: the account's "
            "connection for this source, made when missing)."
        ),
    ),
]
FromDate = Annotated[
    str | None,
    typer.Option(
        "--from",
        help=(
            "First day the import covers (YYYY-MM-DD); rows before it are left out. Default: "
            "the earliest row's start."
        ),
    ),
]
ToDate = Annotated[
    str | None,
    typer.Option(
        "--to",
        help=(
            "Last day the import covers (YYYY-MM-DD); rows after it are left out. Default: the "
            "latest row's start. The connection's imported entries in the covered days that "
            "the import does not produce again are deleted."
        ),
    ),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Report what would change; write nothing.")]
Unmatched = Annotated[
    OnUnmatched,
    typer.Option(
        "--unmatched",
        help="Rows no rule takes: skip them (counted in the report) or fail the import.",
    ),
]
Files = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Saved responses: a page, a JSON array of pages, or JSON Lines.", dir_okay=False
    ),
]
UseApi = Annotated[
    bool,
    typer.Option("--api", help="Ask the provider's API instead of reading saved responses."),
]
Since = Annotated[
    str | None,
    typer.Option(
        "--since", help="With --api: first day asked for (default: 30 days before --until)."
    ),
]
Until = Annotated[
    str | None, typer.Option("--until", help="With --api: last day asked for (default: today).")
]


def _require() -> None:
    require_extra("server", SERVER_PACKAGES, "import")
    require_extra("imports", IMPORT_PACKAGES, "import")


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        say(f"{option}: {value!r} is not a date (YYYY-MM-DD)", console=err)
        raise typer.Exit(1) from None


def _fail(lines: list[str], what: str) -> None:
    for line in lines:
        say(line, console=err)
    say(f"Nothing was imported: {len(lines)} problem(s) {what}.", console=err)
    raise typer.Exit(1)


@contextmanager
def _refusals(what: str) -> Iterator[None]:
    """Every refusal of an import as lines on stderr and exit status 1 (75 when busy)."""
    from airoi.imports.problems import ImportRefused
    from airoi.load import BundleError, LoadBusy

    try:
        yield
    except ImportRefused as exc:
        _fail(exc.lines, what)
    except BundleError as exc:
        _fail(exc.problems, what)
    except LoadBusy as exc:
        say(str(exc), console=err)
        raise typer.Exit(BUSY_EXIT) from None
    except KeyboardInterrupt:
        say("Import interrupted: nothing was imported.", console=err)
        raise typer.Exit(130) from None


@contextmanager
def _engine(database_url: str | None) -> Iterator[Any]:
    """The store's writer engine, migrated; its connections closed when the import ends."""
    engine = writer_engine(settings_for(database_url))
    try:
        yield engine
    finally:
        engine.dispose()


def _progress() -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """Rows read so far, shown on a terminal (a long import), else nothing."""
    if not err.is_terminal:
        return None, lambda: None
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err
    )
    task = progress.add_task("Reading rows", total=None)
    progress.start()

    def advance(rows: int) -> None:
        progress.update(task, description=f"Read {rows:,} rows")

    return advance, progress.stop


def _money(cents: Decimal, currency: str) -> str:
    units = (cents / 100).quantize(Decimal("0.01"))
    return f"{units:,} {currency}"


def _print_cost_report(report: CostReport, unmatched_by: str) -> None:
    from airoi.imports.costs import unmatched_total

    entries = report.entries
    verb = "would be" if report.dry_run else "were"
    matched = report.rows_matched
    unmatched_rows = sum(slot.rows for slot in report.unmatched.values())
    out.print(
        f"Rows read: {report.rows_read:,}; matched: {matched:,}; unmatched: {unmatched_rows:,}"
        + (f"; outside --from/--to: {report.rows_outside:,}" if report.rows_outside else ""),
        highlight=False,
        soft_wrap=True,
    )
    out.print(
        f"Cost entries {verb}: inserted {entries['inserted']:,}, updated {entries['updated']:,}, "
        f"unchanged {entries['unchanged']:,}, deleted {entries['deleted']:,}",
        highlight=False,
        soft_wrap=True,
    )
    if report.dates is not None:
        out.print(f"Dates covered: {report.dates[0]} to {report.dates[1]}", highlight=False)
    if report.connection_id is not None:
        out.print(f"Connection: {report.connection_id}", highlight=False)
    if report.unmatched:
        totals = unmatched_total(report.unmatched)
        money = ", ".join(_money(amount, code) for code, amount in sorted(totals.items()))
        out.print(
            f"Unmatched (not imported): {unmatched_rows:,} rows holding {money or 'no amount'}",
            highlight=False,
            soft_wrap=True,
        )
        for label, slot in sorted(report.unmatched.items()):
            amounts = ", ".join(_money(a, c) for c, a in sorted(slot.amounts.items()))
            out.print(
                f"  {unmatched_by} {' / '.join(label)}: {slot.rows:,} rows, "
                f"{amounts or 'no amount'}",
                highlight=False,
                soft_wrap=True,
            )
    if report.dry_run:
        out.print("Dry run: nothing was written.", highlight=False)


def _unmatched_problems(
    unmatched: dict[tuple[str, ...], Any], by: str, column: str | None
) -> list[str]:
    """--unmatched fail: one line for each kind of row no rule takes, naming the first."""
    at = f", column {column}" if column else ""
    return [
        f"{slot.first}{at}: no rule takes this row ({by} {' / '.join(label)}; "
        f"{slot.rows:,} such rows)"
        for label, slot in sorted(unmatched.items())
    ]


@dataclass(frozen=True)
class CostJob:
    """A cost import's options, as its command was given them."""

    platform: str
    account: int
    rules_path: Path
    connection: int | None
    from_: str | None
    to: str | None
    dry_run: bool
    wait: float
    unmatched: OnUnmatched
    database_url: str | None
    allowed: Callable[[str], bool]
    unmatched_by: str
    api: bool = False
    asked: tuple[date, date] | None = None  # --api: the days asked for


def _cost_import(job: CostJob, read: Read) -> None:
    from airoi.imports.rules import read_rules

    given = (_day(job.from_, "--from"), _day(job.to, "--to"))
    if given[0] and given[1] and given[0] > given[1]:
        _fail(["--from: must not be later than --to"], "in the options")
    with _refusals("in the import"):
        rules = read_rules(
            job.rules_path, allowed_fields=job.allowed, focus=job.platform == "focus"
        )
        with _engine(job.database_url) as engine:
            report = _cost_run(job, engine, read, rules, given)
    _print_cost_report(report, job.unmatched_by)


def _cost_run(
    job: CostJob, engine: Any, read: Read, rules: Any, given: tuple[date | None, date | None]
) -> CostReport:
    """Read and group every row, name every problem, then write in one load (R40, R41)."""
    from airoi.imports import costs
    from airoi.imports.problems import Problems
    from airoi.imports.writing import Target

    target = Target(
        account_id=job.account, platform=job.platform, connection_id=job.connection, api=job.api
    )
    problems = Problems()
    advance, stop = _progress()
    try:
        groups = read(rules, given, problems, advance)
    finally:
        stop()
    if job.unmatched is OnUnmatched.fail:
        column = rules.fields[0] if rules.fields else None
        for line in _unmatched_problems(groups.unmatched, job.unmatched_by, column):
            problems.add(line)
    costs.check(groups, rules, engine, target, problems)
    problems.raise_if_any()
    # --api: the days asked for are the days covered, unless --from / --to say otherwise.
    asked = job.asked or (None, None)
    dates = (given[0] or asked[0], given[1] or asked[1])
    return costs.run(
        engine, groups, target, given_dates=dates, dry_run=job.dry_run, wait=job.wait, say=_say_err
    )


def _say_err(line: str) -> None:
    say(line, console=err)


@import_app.command("focus")
def focus(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="FOCUS 1.0-1.2 exports: .csv, .csv.gz or .parquet", exists=True, dir_okay=False
        ),
    ],
    account: Account,
    rules: RulesFile,
    connection: Connection = None,
    from_: FromDate = None,
    to: ToDate = None,
    dry_run: DryRun = False,
    wait: LoadWait = DEFAULT_LOAD_WAIT_SECONDS,
    unmatched: Unmatched = OnUnmatched.skip,
    database_url: DatabaseUrl = None,
) -> None:
    """Import FOCUS cost and usage data (CSV, gzipped CSV or Parquet) as cost entries.

    Rows are grouped into one entry per initiative, day span, currency, category, type,
    vendor, service and billing account, summed exactly and rounded once. The report names
    the rows no rule takes and the money they hold.
    """
    _require()
    from airoi.imports import focus as reader

    def read(rules: Any, given: Any, problems: Any, advance: Any) -> Any:
        return reader.read_focus(files, rules, dates=given, problems=problems, progress=advance)

    job = CostJob(
        platform="focus",
        account=account,
        rules_path=rules,
        connection=connection,
        from_=from_,
        to=to,
        dry_run=dry_run,
        wait=wait,
        unmatched=unmatched,
        database_url=database_url,
        allowed=reader.any_field,
        unmatched_by="provider / service",
    )
    _cost_import(job, read)


def _provider_command(name: str) -> None:
    def command(
        files: Files = None,
        account: Account = 0,
        rules: RulesFile = Path(),
        api: UseApi = False,
        since: Since = None,
        until: Until = None,
        connection: Connection = None,
        from_: FromDate = None,
        to: ToDate = None,
        dry_run: DryRun = False,
        wait: LoadWait = DEFAULT_LOAD_WAIT_SECONDS,
        unmatched: Unmatched = OnUnmatched.skip,
        database_url: DatabaseUrl = None,
    ) -> None:
        _require()
        from airoi.imports import providers
        from airoi.settings import Settings

        provider = providers.PROVIDERS[name]
        if not account:
            _fail(["--account: required"], "in the options")
        if rules == Path():
            _fail(["--rules: required"], "in the options")
        if api and files:
            _fail(["give saved response files or --api, not both"], "in the options")
        if not api and not files:
            _fail(["give saved response files, or --api to ask the API"], "in the options")
        if not api and (since or until):
            _fail(["--since and --until go with --api"], "in the options")
        for path in files or []:
            if not path.is_file():
                _fail([f"{path}: no such file"], "in the options")
        window = None
        if api:
            with _refusals("in the options"):
                window = providers.api_window(
                    _day(since, "--since"),
                    _day(until, "--until"),
                    Settings.from_env().current_date(),
                )

        def read(rules_: Any, given: Any, problems: Any, advance: Any) -> Any:
            if window is not None:
                return providers.read_api(
                    provider, os.environ, rules_, window=window, dates=given, problems=problems
                )
            return providers.read_saved(
                provider, files or [], rules_, dates=given, problems=problems
            )

        job = CostJob(
            platform=name,
            account=account,
            rules_path=rules,
            connection=connection,
            from_=from_,
            to=to,
            dry_run=dry_run,
            wait=wait,
            unmatched=unmatched,
            database_url=database_url,
            allowed=provider.fields.__contains__,
            unmatched_by="project" if name == "openai" else "workspace",
            api=api,
            asked=window,
        )
        _cost_import(job, read)

    vendor = providers_vendor(name)
    route = "/v1/organization/costs" if name == "openai" else "/v1/organizations/cost_report"
    command.__doc__ = (
        f"Import {vendor}'s cost report as cost entries: saved responses of GET {route}, "
        f"or --api with the admin key in {name.upper()}_ADMIN_KEY (and the API base in "
        f"{name.upper()}_BASE_URL when set).\n\nPages are followed to the end; 429 and 5xx "
        "answers are tried again as Retry-After asks, a bounded number of times."
    )
    import_app.command(name)(command)


def providers_vendor(name: str) -> str:
    return {"openai": "OpenAI", "anthropic": "Anthropic"}[name]


_provider_command("openai")
_provider_command("anthropic")


@import_app.command("table")
def table(
    kind: Annotated[TableKind, typer.Argument(help="What each row is.", case_sensitive=True)],
    file: Annotated[
        Path | None,
        typer.Argument(
            help="A CSV (UTF-8, header row), XLSX (first sheet) or Parquet file.", dir_okay=False
        ),
    ] = None,
    account: Annotated[
        int | None, typer.Option("--account", help="Id of the account to import into.")
    ] = None,
    template: Annotated[
        bool, typer.Option("--template", help="Print KIND's header row and exit.")
    ] = False,
    connection: Connection = None,
    dry_run: DryRun = False,
    wait: LoadWait = DEFAULT_LOAD_WAIT_SECONDS,
    database_url: DatabaseUrl = None,
) -> None:
    """Import one record a row of KIND; columns are the bundle's field names.

    A row without id but with source_ref is matched by its source (SEMANTICS R42): updated
    when it exists, made with an id from the store when not. An empty cell is null; a column
    left out is a field left out.
    """
    if template:
        from airoi.imports.template import header_row

        sys.stdout.write(header_row(kind.value) + "\n")
        return
    if file is None:
        _fail(["FILE: required (or --template)"], "in the options")
    if account is None:
        _fail(["--account: required"], "in the options")
    assert file is not None and account is not None
    if not file.is_file():
        _fail([f"{file}: no such file"], "in the options")
    _require()
    from airoi.imports.tables import import_table

    with _refusals(f"in {file.name}"), _engine(database_url) as engine:
        report = import_table(
            engine,
            kind.value,
            file,
            account_id=account,
            connection_id=connection,
            dry_run=dry_run,
            wait=wait,
            say=_say_err,
        )
    verb = "would be" if dry_run else "were"
    out.print(
        f"Rows read: {report.rows:,}. {kind.value} {verb}: inserted {report.inserted:,}, "
        f"updated {report.updated:,}, unchanged {report.unchanged:,}",
        highlight=False,
        soft_wrap=True,
    )
    if report.connection_id is not None:
        out.print(f"Connection: {report.connection_id}", highlight=False)
    if dry_run:
        out.print("Dry run: nothing was written.", highlight=False)
