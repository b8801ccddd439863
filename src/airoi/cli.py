"""The `airoi` command line (BUNDLE.md): init, load, demo, token issue|revoke, serve, openapi, pull,
verify.

Only typer, rich and the standard library are imported here: `airoi pull` and `--help` work
with the base install (the client). The server commands import the server's packages when
they run, after checking that the `server` extra is installed.
"""

from __future__ import annotations

import errno
import functools
import importlib.metadata
import importlib.util
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Column, Table

from airoi.settings import DEFAULT_LOAD_WAIT_SECONDS, MAX_LOAD_WAIT_SECONDS, Settings

if TYPE_CHECKING:  # the pull extra's (duckdb), imported by `verify` when it runs
    from airoi.client.verify import Verification

app = typer.Typer(
    help="airoi: a read-only AI-ROI reporting service. Settings come from AIROI_* variables.",
    no_args_is_help=True,
    rich_markup_mode=None,  # help paragraphs are rewrapped to the terminal, not broken twice
)
token_app = typer.Typer(
    help="Issue and revoke personal access tokens.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(token_app, name="token")


def _print_version(asked: bool) -> None:
    if not asked:
        return
    try:
        version = importlib.metadata.version("airoi")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        version = "unknown (not installed)"
    _say(f"airoi {version}")
    raise typer.Exit


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print airoi's version and exit.",
        ),
    ] = False,
) -> None:
    pass


out = Console()
err = Console(stderr=True)


def _say(text: str, *, console: Console = out) -> None:
    """One line as written: never wrapped or marked up."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        envvar="AIROI_DATABASE_URL",
        help="Database URL (default sqlite:///airoi.db).",
    ),
]
# The service and the token, as the commands that ask the API take them (from the
# environment too, which keeps the token out of the shell history).
BaseUrl = Annotated[
    str, typer.Option("--base-url", envvar="AIROI_BASE_URL", help="The API's base URL.")
]
BearerToken = Annotated[str, typer.Option("--token", envvar="AIROI_TOKEN", help="A bearer token.")]
PROGRESS_MIN_BYTES = 2_000_000
# Import names of the `server` extra's packages, and of the `pull` extra's.
SERVER_PACKAGES = (
    "litestar",
    "msgspec",
    "sqlalchemy",
    "mcp",
    "alembic",
    "psycopg",
    "ijson",
    "uvicorn",
    "limits",
    "redis",
    "xxhash",
    "prometheus_client",
)
PULL_PACKAGES = ("duckdb", "pyarrow")


def _missing(packages: tuple[str, ...]) -> list[str]:
    missing = []
    for name in packages:
        try:
            found = importlib.util.find_spec(name)
        except ImportError:
            found = None
        if found is None:
            missing.append(name)
    return missing


def _require(extra: str, packages: tuple[str, ...], command: str, *, code: int = 1) -> None:
    """Stop (exit status `code`) with one line naming the extra to install when its packages
    are not there."""
    missing = _missing(packages)
    if missing:
        err.print(
            f"`airoi {command}` needs the {extra} extra ({', '.join(missing)} not installed):"
            f" pip install -e '.[{extra}]' in the airoi clone",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(code)


def _require_server(command: str) -> None:
    _require("server", SERVER_PACKAGES, command)


def _settings(database_url: str | None) -> Settings:
    from airoi.settings import database_url_from

    try:
        settings = Settings.from_env()
        if database_url:
            settings = settings.with_(
                database_url=database_url_from(database_url, "--database-url")
            )
    except ValueError as exc:  # names the AIROI_* variable (or option) and what it must be
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    return settings


def _writer(settings: Settings):  # type: ignore[no-untyped-def]
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade
    from airoi.db.secret import ensure_store_secret

    engine = make_engine(settings.database_url)
    upgrade(engine)
    # SEMANTICS R13: the migration makes the store's secret; made again should it be gone.
    ensure_store_secret(engine)
    return engine


@app.command()
def init(database_url: DatabaseUrl = None) -> None:
    """Create or migrate the schema in the configured database."""
    _require_server("init")
    _writer(_settings(database_url))
    out.print("Schema is up to date.")


# Exit status of a load that gave up waiting for another (EX_TEMPFAIL: try again later).
BUSY_EXIT = 75


def _warn(line: str) -> None:
    """One line to stderr, never wrapped or marked up (BUNDLE.md: one line per problem)."""
    _say(line, console=err)


@app.command()
def load(
    file: Annotated[
        Path, typer.Argument(help="A bundle: .json or .json.gz", exists=True, dir_okay=False)
    ],
    keep_stamps: Annotated[
        bool,
        typer.Option(
            "--keep-stamps",
            help=(
                "Keep the bundle's updated_at values instead of stamping changes with this "
                "load's moment; gives up the guarantee that a sync sees every change (for "
                "fixtures, and copying one store into another)."
            ),
        ),
    ] = False,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            min=0,
            max=MAX_LOAD_WAIT_SECONDS,
            help="Seconds to wait for another load of the same store to finish.",
        ),
    ] = DEFAULT_LOAD_WAIT_SECONDS,
    database_url: DatabaseUrl = None,
) -> None:
    """Validate FILE and upsert it in one transaction; print the counts of rows by outcome.

    A record for an existing row changes only the fields it gives: a field left out keeps
    its stored value, and a field given as null clears it. Loads of one store run one at a
    time, and each stamps the rows it inserts or changes with one moment of its own.

    Refused, naming the record and field: a text longer than its column (names and titles
    up to 500 characters, long texts such as descriptions and notes 100,000), a lone
    surrogate, and figures that could pass a 64-bit integer once summed (SEMANTICS R38).
    """
    _require_server("load")
    from airoi.load import BundleError, LoadBusy, load_bundle

    engine = _writer(_settings(database_url))
    size = file.stat().st_size
    run = functools.partial(
        load_bundle, engine, file, keep_stamps=keep_stamps, wait=wait, say=_warn
    )
    try:
        if size >= PROGRESS_MIN_BYTES:
            columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
            with Progress(*Progress.get_default_columns()[:1], *columns, console=err) as progress:
                task = progress.add_task(f"Loading {file.name}", total=None)

                def advance(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                report = run(progress=advance)
        else:
            report = run()
    except KeyboardInterrupt:
        _warn("Load interrupted: nothing was loaded.")
        raise typer.Exit(130) from None
    except LoadBusy as exc:
        _warn(str(exc))
        raise typer.Exit(BUSY_EXIT) from None
    except BundleError as exc:
        for problem in exc.problems:
            _warn(problem)
        _warn(f"Nothing was loaded: {len(exc.problems)} problem(s) in {file}.")
        raise typer.Exit(1) from None
    table = Table("kind", "inserted", "updated", "unchanged", "deleted")
    kinds = sorted(
        set(report.inserted) | set(report.updated) | set(report.unchanged) | set(report.deleted)
    )
    for kind in kinds:
        table.add_row(
            kind,
            *(
                str(counts.get(kind, 0))
                for counts in (report.inserted, report.updated, report.unchanged, report.deleted)
            ),
        )
    totals = report.totals()
    table.add_row(
        "total", *(str(totals[k]) for k in ("inserted", "updated", "unchanged", "deleted"))
    )
    out.print(table)
    if report.stamp is not None and (totals["inserted"] or totals["updated"] or totals["deleted"]):
        stamped = report.stamp.isoformat(timespec="milliseconds") + "Z"
        out.print(f"Changes stamped {stamped}.", highlight=False)
    if report.ignored_stamps:
        out.print(
            f"Ignored {report.ignored_stamps:,} updated_at value(s) the bundle gave: the store "
            "stamps what a load changes (--keep-stamps keeps them).",
            highlight=False,
            soft_wrap=True,
        )


def _served_url(host: str, port: int) -> str:
    """The root URL a client reaches the server at, listening on `host` and `port`."""
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host  # noqa: S104
    if ":" in shown and not shown.startswith("["):  # an IPv6 address
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def _base_urls(host: str, port: int) -> tuple[str, str, str]:
    """The API's base URL, the tool endpoint's and the dashboard's."""
    root = _served_url(host, port)
    return f"{root}/api/v1", f"{root}/mcp", f"{root}/"


@app.command()
def demo(
    database_url: DatabaseUrl = None,
    host: Annotated[
        str, typer.Option(help="Host the printed URLs (and --serve) use.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="Port the printed URLs (and --serve) use.")
    ] = 8000,
    serve_after: Annotated[
        bool, typer.Option("--serve", help="Serve the API right after.")
    ] = False,
) -> None:
    """Create or refresh the demo account, issue a token, print the URLs and the token."""
    _require_server("demo")
    from airoi.auth import issue_token
    from airoi.demo import DEMO_OWNER_USER_ID, DemoRefused, build_demo_bundle, load_demo
    from airoi.load import BundleError, LoadBusy

    settings = _settings(database_url)
    if serve_after:
        # Before the token is issued and printed: it would be of no use with no server.
        _operator_metrics_directory()
        _require_free_port(host, port)
    engine = _writer(settings)
    demo_bundle = build_demo_bundle(settings.current_date())
    try:
        report = load_demo(engine, demo_bundle, say=_warn)
    except LoadBusy as exc:
        _warn(str(exc))
        raise typer.Exit(BUSY_EXIT) from None
    except DemoRefused as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except BundleError as exc:
        # A record of the store's own on one of the demo's ids (BUNDLE.md: one line each).
        for problem in exc.problems:
            err.print(problem, markup=False, highlight=False, soft_wrap=True)
        err.print("The demo was not refreshed; it is as it was.", markup=False, highlight=False)
        raise typer.Exit(1) from None
    token = issue_token(engine, DEMO_OWNER_USER_ID, expires_in_days=30)
    base_url, mcp_url, dashboard_url = _base_urls(host, port)
    totals = report.totals()
    out.print(f"Demo account loaded: {totals['inserted']} rows.")
    out.print(f"Base URL:      {base_url}", highlight=False)
    out.print(f"Tool endpoint: {mcp_url}", highlight=False)
    out.print(f"Token:         {token.secret}", highlight=False)
    # The fragment never reaches the server; the page keeps the token for the tab and takes it
    # out of the address bar (docs/dashboard.md).
    out.print(
        f"Dashboard:     {dashboard_url}#token={token.secret}", highlight=False, soft_wrap=True
    )
    out.print("It is shown once and expires in 30 days. Try:", highlight=False)
    out.print(
        f'  curl -H "Authorization: Bearer {token.secret}" {base_url}/initiatives',
        highlight=False,
        soft_wrap=True,
    )
    if serve_after:
        _serve(settings, host, port, workers=1)


@token_app.command("issue")
def token_issue(
    user: Annotated[int, typer.Option("--user", help="Id of an Owner or Admin user.")],
    expires_in: Annotated[
        int | None, typer.Option("--expires-in", help="Days until it expires.")
    ] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Print a new token for USER (an Owner or Admin); shown once, stored only as a hash."""
    _require_server("token issue")
    from airoi.auth import TokenRefused, issue_token

    engine = _writer(_settings(database_url))
    try:
        token = issue_token(engine, user, expires_in_days=expires_in)
    except TokenRefused as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    out.print(token.secret, highlight=False)
    expiry = (
        f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "does not expire"
    )
    err.print(
        f"Prefix {token.prefix}; {expiry}. Store it now: it is not shown again.", highlight=False
    )


@token_app.command("revoke")
def token_revoke(
    prefix: Annotated[str, typer.Argument(help="The token's shown prefix (or the whole token).")],
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke the token whose shown prefix matches PREFIX, or the whole token given.

    When live tokens share a shown prefix, give the whole token to revoke one of them.
    """
    _require_server("token revoke")
    from airoi.auth import TokenRefused, revoke_token

    engine = _writer(_settings(database_url))
    try:
        revoked = revoke_token(engine, prefix)
    except TokenRefused as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    out.print(f"Revoked the token {revoked}…", highlight=False)


def _require_current_schema(settings: Settings) -> None:
    """A store of another schema revision stops `serve` with the command that migrates it."""
    from airoi.app import StoreUnreadable, serving_schema_check
    from airoi.db.engine import make_engine
    from airoi.db.migrate import StoreNotReady

    # With the serving engine's time limits: a database that accepts and never answers would
    # otherwise hold the start-up forever.
    engine = make_engine(
        settings.database_url, read_only=True, statement_timeout_ms=settings.statement_timeout_ms
    )
    try:
        serving_schema_check(engine, settings)
    except (StoreNotReady, StoreUnreadable) as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()


def _require_free_port(host: str, port: int) -> None:
    """Stop before anything is loaded or printed when the server could not listen there.

    Every address the host names is tried, as the server listens on each of them, with
    SO_REUSEADDR as uvicorn sets it: a port held by another server is refused, one in
    TIME_WAIT is not. Taken between this check and the server's start, uvicorn's own error
    still says so.
    """
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        err.print(f"--host {host}: no such address to listen on.", highlight=False)
        raise typer.Exit(1) from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    other = port + 1 if port < 65535 else port - 1
                    message = (
                        f"Port {port} on {host} is already in use (an earlier `airoi serve` "
                        f"or `airoi demo --serve` still running?). Stop it, or give another "
                        f"port: --port {other}."
                    )
                else:
                    message = f"Cannot listen on {host} port {port}: {exc.strerror}."
                err.print(message, markup=False, highlight=False, soft_wrap=True)
                raise typer.Exit(1) from None


# The metrics library's own variable: where each worker of `airoi serve` records its metrics.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def _operator_metrics_directory() -> Path | None:
    """The PROMETHEUS_MULTIPROC_DIR the operator set (None if unset): it must name a directory
    this process can write, or `serve` stops before anything is loaded or printed."""
    given = os.environ.get(MULTIPROC_ENV)
    if given is None:
        return None
    path = Path(given)
    if not given or not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        err.print(
            f"{MULTIPROC_ENV}={given!r} is not a directory this user can write: name one, or "
            "unset it and `airoi serve` makes its own.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    return path


@contextmanager
def _metrics_directory(workers: int) -> Iterator[None]:
    """Where the workers record their metrics, so that /metrics answers the sum over all of
    them (airoi.observability.Metrics): the operator's directory, emptied of the metrics
    library's files at start and at exit; else, with several workers, a private one made for
    this run and removed at exit. One worker and none set: the process's own registry."""
    from airoi.observability import clear_worker_files

    given = _operator_metrics_directory()
    if given is not None:
        clear_worker_files(given)  # a run before, ended by a kill, left its counts there
        try:
            yield
        finally:
            clear_worker_files(given)
        return
    if workers == 1:
        yield
        return
    path = tempfile.mkdtemp(prefix="airoi-metrics-")  # mode 0700
    os.environ[MULTIPROC_ENV] = path  # before the workers start: they inherit it
    try:
        yield
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)


def _serve(settings: Settings, host: str, port: int, workers: int) -> None:
    import uvicorn

    from airoi.logs import configure_logging
    from airoi.serving import PROTOCOL
    from airoi.settings import HEADER_TIMEOUT_ENV

    configure_logging(settings.log_format, settings.log_level)
    # The workers read these from the environment they inherit.
    os.environ["AIROI_DATABASE_URL"] = settings.database_url
    if not os.environ.get("AIROI_APP_URL"):
        # The page links tools return point where this serves, unless set (the demo's pages).
        os.environ["AIROI_APP_URL"] = _served_url(host, port)
    os.environ[HEADER_TIMEOUT_ENV] = repr(settings.header_timeout_seconds)
    with _metrics_directory(workers):
        uvicorn.run(
            "airoi.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            http=PROTOCOL,  # httptools, bounds on the head, the body and the time to send them
            # The server's loggers go through the service's one handler (airoi.logs): no
            # config of uvicorn's own, in this process or in a worker, where the app factory
            # sets it.
            log_config=None,
            log_level=None,
            access_log=False,  # the service writes its own access line, without the query
        )


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the HTTP API at /api/v1 and the tool endpoint at /mcp."""
    _require_server("serve")
    import logging

    from airoi.logs import configure_logging

    settings = _settings(database_url)
    # Before the start-up check, which may log that the store cannot be reached yet.
    configure_logging(settings.log_format, settings.log_level)
    _operator_metrics_directory()
    _require_current_schema(settings)
    _require_free_port(host, port)
    base_url, _, _ = _base_urls(host, port)
    logging.getLogger("airoi").info("serving %s", base_url)
    _serve(settings, host, port, workers)


@app.command()
def openapi() -> None:
    """Print the OpenAPI description that `serve` would serve."""
    _require_server("openapi")
    from airoi.app import create_app, describe

    schema = describe(create_app(_settings(None)))
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")


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


@app.command()
def pull(
    base_url: BaseUrl,
    token: BearerToken,
    to: Annotated[
        Path,
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

    _require("pull", PULL_PACKAGES, "pull")

    import duckdb
    from rich.progress import MofNCompleteColumn, SpinnerColumn, TextColumn

    from airoi.client import AiroiError, Client
    from airoi.client.pull import DELETIONS, check_target, choose_resources, format_for, walks
    from airoi.client.pull import pull as run_pull

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

        try:
            reports = run_pull(
                client,
                to,
                fmt,
                resources=chosen,
                full_refresh=full_refresh,
                progress=advance,
                notice=lambda line: _say(line, console=err),
            )
        except KeyboardInterrupt:
            err.print(
                "Pull interrupted. What was written before stays; run again to go on.",
                markup=False,
                highlight=False,
            )
            raise typer.Exit(130) from None
        except AiroiError as exc:
            err.print(f"Pull stopped: {exc}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except (duckdb.Error, OSError) as exc:
            _store_failed(to, exc)
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


@app.command()
def verify(
    base_url: BaseUrl,
    token: BearerToken,
    store: Annotated[
        Path,
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
    _require("pull", ("duckdb",), "verify", code=2)

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
        _say(f"Verify stopped: {exc}", console=err)
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
        except KeyboardInterrupt:
            _say("Verify interrupted: nothing was compared.", console=err)
            raise typer.Exit(130) from None
        except (AiroiError, CopyError, Inconclusive) as exc:
            _say(f"Verify stopped: {exc}", console=err)
            raise typer.Exit(2) from None

    for note in result.notes:
        _say(f"Note: {note}")
    differences = result.differences
    listed = result.compared if show_all else differences
    if listed:
        table = Table(
            "figure", "scope", "window", "service", "copy", "difference",
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
            _say(
                f"... and {len(listed) - VERIFY_SHOWN_ROWS} more differences"
                " (--all lists every figure)."
            )
    if result.unchecked:
        table = Table("budget row", "currency", "why", title="Not checkable from a copy")
        for unchecked in result.unchecked[:VERIFY_SHOWN_ROWS]:
            table.add_row(str(unchecked.initiative_id), unchecked.currency, unchecked.reason)
        out.print(table)
        if len(result.unchecked) > VERIFY_SHOWN_ROWS:
            _say(f"... and {len(result.unchecked) - VERIFY_SHOWN_ROWS} more rows not checkable.")
    row_differences = _show_row_checks(result, show_all)
    _say(
        f"Service {result.base_url} as of {result.today.isoformat()} ({result.currency}); "
        f"copy {result.store} ({result.fmt})."
    )
    if result.figures:
        _say(
            f"{len(result.compared)} figures compared (the portfolio and {result.initiatives} "
            f"initiatives over 4 windows; {result.budget_rows} budget rows): "
            f"{len(differences)} differ, {len(result.unchecked)} budget rows not checkable "
            f"from a copy. {result.seconds:.2f} s, {result.requests} requests."
        )
    else:
        _say(
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
            _say(
                f"Note: the copy's {check.resource} have no {', '.join(check.not_in_copy)} "
                "column (pulled before the service served it, or removed from the copy): "
                "not compared."
            )
    if result.lists_not_pulled:
        _say(
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
            _say(f"... and {len(differing) - len(shown)} more rows (--all lists every one).")
    changed = sum(c.changed_since + c.deleted_since for c in result.lists)
    _say(
        f"{sum(c.held for c in result.lists):,} rows of {len(result.lists)} lists compared: "
        f"{len(differing):,} differ; {changed:,} changed or deleted in the service since the "
        "copy was pulled (pull again to bring them)."
    )
    return len(differing)


def _database_error() -> type[Exception] | None:
    """SQLAlchemy's DBAPIError, when the server extra is installed (the client needs none)."""
    try:
        from sqlalchemy.exc import DBAPIError
    except ImportError:
        return None
    return DBAPIError


def main() -> None:
    try:
        app(prog_name="airoi")  # `python -m airoi` too: its help and completion name `airoi`
    except Exception as exc:
        database_error = _database_error()
        if database_error is None or not isinstance(exc, database_error):
            raise
        # The database could not be reached or refused the command. Its message can hold the
        # connection's address and user, so one line names only the kind (SEMANTICS R15).
        kind = type(getattr(exc, "orig", None) or exc).__name__
        err.print(
            f"The database could not be used ({kind}); check AIROI_DATABASE_URL and that "
            "the server is up.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
