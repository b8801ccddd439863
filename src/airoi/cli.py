"""The `airoi` command line (BUNDLE.md): init, load, demo, token issue|revoke, serve and openapi
here; pull and verify, the client's, in airoi.client.commands; import in airoi.imports.commands.

Only typer, rich and the standard library are imported here: `airoi pull` and `--help` work
with the base install (the client). The server commands import the server's packages when
they run, after checking that the `server` extra is installed.
"""

from __future__ import annotations

import errno
import functools
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from airoi.client import commands as client_commands
from airoi.imports.commands import import_app
from airoi.settings import DEFAULT_LOAD_WAIT_SECONDS, Settings
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
    say(f"airoi {version}")
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


PROGRESS_MIN_BYTES = 2_000_000


def _require_server(command: str) -> None:
    require_extra("server", SERVER_PACKAGES, command)


@app.command()
def init(database_url: DatabaseUrl = None) -> None:
    """Create or migrate the schema in the configured database."""
    _require_server("init")
    writer_engine(settings_for(database_url))
    out.print("Schema is up to date.")


# Exit status of a load that gave up waiting for another (EX_TEMPFAIL: try again later).
BUSY_EXIT = 75


def _warn(line: str) -> None:
    """One line to stderr, never wrapped or marked up (BUNDLE.md: one line per problem)."""
    say(line, console=err)


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
    wait: LoadWait = DEFAULT_LOAD_WAIT_SECONDS,
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

    engine = writer_engine(settings_for(database_url))
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

    settings = settings_for(database_url)
    if serve_after:
        # Before the token is issued and printed: it would be of no use with no server.
        _operator_metrics_directory()
        _require_free_port(host, port)
    engine = writer_engine(settings)
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

    engine = writer_engine(settings_for(database_url), existing=True)
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

    engine = writer_engine(settings_for(database_url), existing=True)
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
def _cleaned_up(cleanup: Callable[[], None]) -> Iterator[None]:
    """Run `cleanup` when the block ends, a SIGTERM too: the server, once shut down by one,
    raises it again, and its default action would end the process past any `finally`."""

    def terminated(signum: int, frame: FrameType | None) -> None:
        cleanup()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)  # ended by the signal, as a supervisor expects

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        cleanup()


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
        with _cleaned_up(functools.partial(clear_worker_files, given)):
            yield
        return
    if workers == 1:
        yield
        return
    path = tempfile.mkdtemp(prefix="airoi-metrics-")  # mode 0700
    os.environ[MULTIPROC_ENV] = path  # before the workers start: they inherit it

    def removed() -> None:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)

    with _cleaned_up(removed):
        yield


def _serve(settings: Settings, host: str, port: int, workers: int) -> None:
    import uvicorn

    from airoi.logs import configure_logging
    from airoi.serving import GRACEFUL_SHUTDOWN_SECONDS, PROTOCOL
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
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
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

    settings = settings_for(database_url)
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

    schema = describe(create_app(settings_for(None)))
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")


# The client's commands, after the service's in `airoi --help`.
app.command()(client_commands.pull)
app.command()(client_commands.verify)
app.add_typer(import_app, name="import")


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
        cause = getattr(exc, "orig", None) or exc
        # SQLite's own name for the refusal: SQLITE_BUSY once the wait for a writer is over.
        if getattr(cause, "sqlite_errorname", "").startswith("SQLITE_BUSY"):
            say(
                "Another command (a load) is writing to this store; nothing was changed. "
                "Try again once it is done.",
                console=err,
            )
            raise SystemExit(BUSY_EXIT) from None
        err.print(
            f"The database could not be used ({type(cause).__name__}); check "
            "AIROI_DATABASE_URL and that the server is up.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
