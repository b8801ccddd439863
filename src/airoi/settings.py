"""One Settings object, read from the environment (AIROI_*)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server's (limits), read when a rate limit is
    from limits import RateLimitItem

DEFAULT_DATABASE_URL = "sqlite:///airoi.db"
DEFAULT_RATE_LIMIT = "600/minute"
DEFAULT_STATEMENT_TIMEOUT_MS = 5000
# SEMANTICS R32: how long a load waits for another load of the same store (`--wait`).
DEFAULT_LOAD_WAIT_SECONDS = 600
MAX_LOAD_WAIT_SECONDS = 86_400
# How long a client may take to send a request's head (and again its body) to `airoi serve`.
HEADER_TIMEOUT_ENV = "AIROI_HEADER_TIMEOUT_SECONDS"
DEFAULT_HEADER_TIMEOUT_SECONDS = 15.0
MAX_HEADER_TIMEOUT_SECONDS = 300.0
# `airoi serve`'s log: one JSON object a line (for a collector) or text (for a terminal), and
# the level of the service's own loggers (airoi.logs).
LOG_FORMAT_ENV = "AIROI_LOG_FORMAT"
LOG_LEVEL_ENV = "AIROI_LOG_LEVEL"
LOG_FORMATS = ("json", "text")
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LOG_FORMAT = "json"
DEFAULT_LOG_LEVEL = "info"


ANY_ORIGIN = "*"
# scheme://host[:port], as a browser sends it in Origin: no path, no trailing slash.
_ORIGIN = re.compile(r"https?://([a-z0-9.-]{1,253}|\[[0-9a-f:.]{2,45}\])(:[0-9]{1,5})?")
_MAX_ORIGINS = 100


def parse_origins(value: str | None) -> tuple[str, ...]:
    """AIROI_CORS_ORIGINS: comma-separated origins, or `*` for any. ValueError says what is
    wrong with a value that is neither."""
    origins = tuple(o.strip().lower() for o in (value or "").split(",") if o.strip())
    if len(origins) > _MAX_ORIGINS:
        raise ValueError(f"AIROI_CORS_ORIGINS names at most {_MAX_ORIGINS} origins")
    if ANY_ORIGIN in origins and len(origins) > 1:
        raise ValueError("AIROI_CORS_ORIGINS is either * alone or a list of origins")
    for origin in origins:
        if origin != ANY_ORIGIN and not _ORIGIN.fullmatch(origin):
            # An origin with a user name before its host may carry a password: not repeated.
            shown = "one with a user name before its host" if "@" in origin else repr(origin[:80])
            raise ValueError(
                "AIROI_CORS_ORIGINS takes origins such as https://notebook.example.com or "
                f"http://localhost:8888 (scheme, host and port, no path), not {shown}"
            )
    return origins


# The days AIROI_TODAY may fix: the five years a window reaches back (SEMANTICS R8) and the
# fiscal year around today (R23) are dates then.
TODAY_RANGE = (date(6, 1, 1), date(9998, 12, 31))


def _today_from_env(value: str | None) -> date | None:
    if not value:
        return None
    try:
        today = date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(
            f"AIROI_TODAY must be an ISO date such as 2026-03-31, not {value!r}"
        ) from exc
    first, last = TODAY_RANGE
    if not first <= today <= last:
        raise ValueError(
            f"AIROI_TODAY must be a date from {first} to {last} (every window and the fiscal "
            f"year around it are dates then), not {value!r}"
        )
    return today


def _statement_timeout_from_env(value: str | None) -> int:
    if not value:
        return DEFAULT_STATEMENT_TIMEOUT_MS
    try:
        milliseconds = int(value)
    except ValueError:
        milliseconds = 0
    if milliseconds < 1:
        raise ValueError(
            f"AIROI_STATEMENT_TIMEOUT_MS must be a whole number of milliseconds, 1 or more, "
            f"not {value!r}"
        )
    return milliseconds


def header_timeout_from_env(value: str | None) -> float:
    if not value:
        return DEFAULT_HEADER_TIMEOUT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= MAX_HEADER_TIMEOUT_SECONDS:  # NaN too
        raise ValueError(
            f"{HEADER_TIMEOUT_ENV} must be a number of seconds above 0 and at most "
            f"{MAX_HEADER_TIMEOUT_SECONDS:g}, not {value!r}"
        )
    return seconds


PUBLIC_URL_ENV = "AIROI_PUBLIC_URL"
_PUBLIC_URL = re.compile(r"https?://([a-z0-9.-]{1,253}|\[[0-9a-f:.]{2,45}\])(:[0-9]{1,5})?")


def public_url_from_env(value: str | None) -> str | None:
    """AIROI_PUBLIC_URL: where clients reach this service (scheme, host, port; no path), the
    OAuth issuer and the base of /mcp's resource identifier (airoi.oauth). None: taken from
    each request's Host."""
    if not value:
        return None
    url = value.strip().rstrip("/").lower()
    if not _PUBLIC_URL.fullmatch(url):
        # A user name or password before the host is not repeated (SEMANTICS R15).
        shown = "one with a user name before its host" if "@" in value else repr(value[:80])
        raise ValueError(
            f"{PUBLIC_URL_ENV} takes a URL such as https://roi.example.com (scheme, host and "
            f"port, no path), not {shown}"
        )
    return url


DATABASE_URL_ENV = "AIROI_DATABASE_URL"
REDIS_URL_ENV = "AIROI_REDIS_URL"


def database_url_from(value: str, name: str = DATABASE_URL_ENV) -> str:
    """The store's URL, checked for what it can name: an SQLite file or a PostgreSQL database
    through psycopg 3. The message never repeats the value (it may hold a password)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    wanted = (
        f"{name} must be sqlite:///path/to/airoi.db or postgresql+psycopg://user@host:5432/database"
    )
    try:
        url = make_url(value)
    except (ArgumentError, ValueError):
        raise ValueError(f"{wanted}; the value set is not a URL of that form.") from None
    backend, driver = url.get_backend_name(), url.get_driver_name()
    if (backend, driver) not in (("sqlite", "pysqlite"), ("postgresql", "psycopg")):
        raise ValueError(f"{wanted}; the value set names {backend}+{driver}.")
    return value


def redis_url_from_env(value: str | None) -> str | None:
    """AIROI_REDIS_URL: redis://[:password@]host[:port][/db] (rediss:// with TLS), or
    unix:///path/to/redis.sock. The message never repeats the value (it may hold a password)."""
    if not value:
        return None
    from urllib.parse import urlsplit

    wanted = (
        f"{REDIS_URL_ENV} must read like redis://host:6379/0 (rediss:// for TLS, a password "
        "as redis://:password@host) or unix:///path/to/redis.sock, each option one the Redis "
        "client takes"
    )
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 - read for its check: a port that is not a number raises
    except ValueError:
        raise ValueError(f"{wanted}; the value set has a port that is not a number.") from None
    if url.scheme in ("unix", "redis+unix"):
        if not url.path:
            raise ValueError(f"{wanted}; the value set names no socket path.")
        # The rate limiter's library knows a socket as redis+unix:// alone.
        return _usable_redis_url("redis+unix" + value[value.index(":") :], wanted)
    if url.scheme not in ("redis", "rediss"):
        raise ValueError(f"{wanted}; the value set begins {url.scheme or 'with no scheme'}.")
    if not url.hostname:
        raise ValueError(f"{wanted}; the value set names no host.")
    database = url.path.strip("/")
    if database and not (database.isascii() and database.isdigit()):
        raise ValueError(f"{wanted}; the value set's database is not a number.")
    return _usable_redis_url(value, wanted)


# TLS certificate checking as the Redis client takes it from a URL; another value passed
# every check here and failed every request (a TypeError).
_SSL_CERT_REQS = ("none", "optional", "required")
_PROTOCOLS = ("2", "3")  # RESP2 or RESP3: another failed every request


def _usable_redis_url(value: str, wanted: str) -> str:
    """`value`, once the Redis client of the rate limiter has taken its options (without
    connecting): an option it cannot read stops the command here, naming neither the value
    nor the client's text (which quotes it), rather than a worker at start or every request."""
    from urllib.parse import parse_qsl, urlsplit

    for name, option in parse_qsl(urlsplit(value).query, keep_blank_values=True):
        # The client compares these as written (NONE is no value of ssl_cert_reqs).
        if name == "ssl_cert_reqs" and option not in _SSL_CERT_REQS:
            raise ValueError(
                f"{wanted}; the value set's ssl_cert_reqs is not one of "
                f"{', '.join(_SSL_CERT_REQS)}."
            )
        if name == "protocol" and option not in _PROTOCOLS:
            raise ValueError(f"{wanted}; the value set's protocol is not 2 or 3.")
    try:
        from limits.storage import storage_from_string
    except ImportError:  # the client alone: no server, no rate limiter to give it to
        return value
    try:
        storage_from_string(value, wrap_exceptions=True)
    except Exception as exc:  # its text can quote the URL, password included
        raise ValueError(
            f"{wanted}; the Redis client cannot use an option of the value set "
            f"({type(exc).__name__})."
        ) from None
    return value


def _one_of(name: str, value: str | None, choices: tuple[str, ...], default: str) -> str:
    if not value:
        return default
    if value.lower() not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value.lower()


# The longest window a rate limit may have: a Retry-After of at most a day (a year's window
# locked a token out for good after its one request).
MAX_RATE_WINDOW_S = 86_400


def _one_rate(value: str) -> RateLimitItem | None:
    """The one limit `value` names, or None: not a limit, or
    several of them, of which only the first would be kept."""
    from limits import parse_many

    try:
        items = parse_many(value)
    except ValueError:
        return None
    return items[0] if len(items) == 1 else None


def _rate_limit_from_env(value: str | None) -> str:
    if not value:
        return DEFAULT_RATE_LIMIT
    item = _one_rate(value)
    # 0/minute refused every request, forever.
    if item is None or item.amount < 1 or item.get_expiry() > MAX_RATE_WINDOW_S:
        raise ValueError(
            f"AIROI_RATE_LIMIT must read like 600/minute or 10/second: one limit, at least 1 "
            f"request a window of at most a day, not {value[:80]!r}"
        )
    return value


# Requests per client address to the OAuth endpoints that take no token and write
# (registration, token, the sign-in form's POST): airoi.oauth.routes.
OAUTH_RATE_LIMIT_ENV = "AIROI_OAUTH_RATE_LIMIT"
DEFAULT_OAUTH_RATE_LIMIT = "60/minute"
MAX_OAUTH_RATE_LIMIT_PER_SECOND = 1_000.0


def oauth_rate_limit_from_env(value: str | None) -> str:
    if not value:
        return DEFAULT_OAUTH_RATE_LIMIT
    item = _one_rate(value)
    # Bounded: at least one request a day, at most MAX_OAUTH_RATE_LIMIT_PER_SECOND a second.
    if (
        item is None
        or item.amount < 1
        or item.amount / item.get_expiry() > MAX_OAUTH_RATE_LIMIT_PER_SECOND
        or item.get_expiry() > MAX_RATE_WINDOW_S
    ):
        raise ValueError(
            f"{OAUTH_RATE_LIMIT_ENV} must read like 60/minute or 5/second (at least 1 request "
            f"a window of at most a day, at most {MAX_OAUTH_RATE_LIMIT_PER_SECOND:g} a second), "
            f"not {value[:80]!r}"
        )
    return value


SECRET_KEY_LENGTHS = (32, 512)


def _secret_key_from_env(value: str | None) -> bytes | None:
    """SEMANTICS R13: the secret cursors are signed with, together with the store's own
    (airoi.db.secret.signing_secret). The message never repeats the value."""
    if not value:
        return None
    shortest, longest = SECRET_KEY_LENGTHS
    printable = all("!" <= c <= "~" for c in value)
    if not printable or not shortest <= len(value) <= longest:
        what = (
            "holds a space or a character outside printable ASCII"
            if not printable
            else f"has {len(value)} characters"
        )
        raise ValueError(
            f"AIROI_SECRET_KEY must be {shortest} to {longest} characters of printable ASCII "
            f"with no spaces, such as the output of `openssl rand -hex 32`; the value set "
            f"{what}."
        )
    return value.encode("ascii")


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    today: date | None = None
    rate_limit: str = DEFAULT_RATE_LIMIT
    app_url: str = "http://localhost:8000"
    redis_url: str | None = None
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS
    # SEMANTICS R13: signs cursors in place of the store's own secret; None: the store's.
    secret_key: bytes | None = field(default=None, repr=False)
    header_timeout_seconds: float = DEFAULT_HEADER_TIMEOUT_SECONDS
    log_format: str = DEFAULT_LOG_FORMAT
    log_level: str = DEFAULT_LOG_LEVEL
    # SEMANTICS R30: origins whose pages may read the API (airoi.cors); none by default.
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    # Where clients reach the service (the OAuth issuer, airoi.oauth); None: each request's Host.
    public_url: str | None = None
    # Requests per client address to the OAuth endpoints that write (airoi.oauth.routes).
    oauth_rate_limit: str = DEFAULT_OAUTH_RATE_LIMIT

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        hosts = tuple(h.strip() for h in env.get("AIROI_ALLOWED_HOSTS", "").split(",") if h.strip())
        return cls(
            database_url=database_url_from(env.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL),
            today=_today_from_env(env.get("AIROI_TODAY")),
            rate_limit=_rate_limit_from_env(env.get("AIROI_RATE_LIMIT")),
            app_url=(env.get("AIROI_APP_URL") or "http://localhost:8000").rstrip("/"),
            redis_url=redis_url_from_env(env.get(REDIS_URL_ENV)),
            allowed_hosts=hosts,
            statement_timeout_ms=_statement_timeout_from_env(env.get("AIROI_STATEMENT_TIMEOUT_MS")),
            secret_key=_secret_key_from_env(env.get("AIROI_SECRET_KEY")),
            header_timeout_seconds=header_timeout_from_env(env.get(HEADER_TIMEOUT_ENV)),
            log_format=_one_of(
                LOG_FORMAT_ENV, env.get(LOG_FORMAT_ENV), LOG_FORMATS, DEFAULT_LOG_FORMAT
            ),
            log_level=_one_of(LOG_LEVEL_ENV, env.get(LOG_LEVEL_ENV), LOG_LEVELS, DEFAULT_LOG_LEVEL),
            cors_origins=parse_origins(env.get("AIROI_CORS_ORIGINS")),
            public_url=public_url_from_env(env.get(PUBLIC_URL_ENV)),
            oauth_rate_limit=oauth_rate_limit_from_env(env.get(OAUTH_RATE_LIMIT_ENV)),
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def current_date(self) -> date:
        """SEMANTICS R1: today is the UTC date unless AIROI_TODAY fixes it."""
        return self.today or datetime.now(UTC).date()
