"""What every `airoi` command writes with: its two consoles, one line as written, the options
of the commands that ask the API, the stop when an extra is not installed, and Ctrl-C noted.

Only typer, rich and the standard library are imported: the client's commands (`pull`,
`verify`) and `--help` work with the base install.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from airoi.settings import MAX_LOAD_WAIT_SECONDS, Settings, database_url_from

if TYPE_CHECKING:
    from sqlalchemy import Engine

# A file or a pipe (cron's mail, a CI log) has no width to keep to: rich would lay tables out
# in 80 columns and cut a figure to "299,966,85…". There they are laid out this wide, unless
# COLUMNS says otherwise.
UNBOUNDED_WIDTH = 400


def _console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = UNBOUNDED_WIDTH
    return console


out = _console()
err = _console(stderr=True)

# The service and the token, as the commands that ask the API take them (from the
# environment too, which keeps the token out of the shell history).
BaseUrl = Annotated[
    str, typer.Option("--base-url", envvar="AIROI_BASE_URL", help="The API's base URL.")
]
BearerToken = Annotated[str, typer.Option("--token", envvar="AIROI_TOKEN", help="A bearer token.")]
# The store, and the wait for another load of it, as every command that writes takes them.
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        envvar="AIROI_DATABASE_URL",
        help="Database URL (default sqlite:///airoi.db).",
    ),
]
LoadWait = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0,
        max=MAX_LOAD_WAIT_SECONDS,
        help="Seconds to wait for another load of the same store to finish.",
    ),
]
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
    "cryptography",
)
PULL_PACKAGES = ("duckdb", "pyarrow")


def say(text: str, *, console: Console = out) -> None:
    """One line as written: never wrapped or marked up."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def missing_packages(packages: tuple[str, ...]) -> list[str]:
    missing = []
    for name in packages:
        try:
            found = importlib.util.find_spec(name)
        except ImportError:
            found = None
        if found is None:
            missing.append(name)
    return missing


def require_extra(extra: str, packages: tuple[str, ...], command: str, *, code: int = 1) -> None:
    """Stop (exit status `code`) with one line naming the extra to install when its packages
    are not there."""
    missing = missing_packages(packages)
    if missing:
        say(
            f"`airoi {command}` needs the {extra} extra ({', '.join(missing)} not installed):"
            f" pip install -e '.[{extra}]' in the airoi clone",
            console=err,
        )
        raise typer.Exit(code)


@contextmanager
def ctrl_c_noted() -> Iterator[Callable[[BaseException], bool]]:
    """Within it, whether an exception came of Ctrl-C (SIGINT): KeyboardInterrupt, or any
    once it was pressed. DuckDB stops a statement on SIGINT with an error of its own ("Query
    interrupted", or a rollback failing after it) in place of KeyboardInterrupt: a command
    tells an interruption from a failure of its store by this. The signal is handled as
    before otherwise (KeyboardInterrupt)."""
    pressed = False
    previous = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: FrameType | None) -> None:
        nonlocal pressed
        pressed = True
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, note)
    try:
        yield lambda exc: pressed or isinstance(exc, KeyboardInterrupt)
    finally:
        signal.signal(signal.SIGINT, previous)


def settings_for(database_url: str | None) -> Settings:
    """The settings from AIROI_*, with --database-url in place of the store's when given; a
    bad one is said on stderr, naming the variable or option (exit 1)."""
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


def writer_engine(settings: Settings, *, existing: bool = False) -> Engine:
    """The store's writer engine, the store migrated; made where there is none, unless the
    command only changes a store that exists (`existing`: a token for a user of it)."""
    from airoi.db.engine import make_engine, missing_sqlite_file, no_store_at
    from airoi.db.migrate import upgrade
    from airoi.db.secret import ensure_store_secret

    engine = make_engine(settings.database_url)
    missing = missing_sqlite_file(engine) if existing else None
    if missing is not None:
        say(f"{no_store_at(missing)}.", console=err)
        raise typer.Exit(1)
    upgrade(engine)
    # SEMANTICS R13: the migration makes the store's secret; made again should it be gone.
    ensure_store_secret(engine)
    return engine
