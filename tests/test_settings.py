"""Settings from the environment (BUNDLE.md) and the day figures are computed for (SEMANTICS R1)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import app_from_env
from airoi.ratelimit import RateLimiter
from airoi.settings import DEFAULT_DATABASE_URL, Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# Settings from the environment, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///airoi.db"
    assert settings.today is None
    assert settings.rate_limit == "600/minute"
    assert (settings.log_format, settings.log_level) == ("json", "info")


def test_the_log_format_and_level_are_read_and_checked() -> None:
    settings = Settings.from_env({"AIROI_LOG_FORMAT": "TEXT", "AIROI_LOG_LEVEL": "Warning"})
    assert (settings.log_format, settings.log_level) == ("text", "warning")
    with pytest.raises(
        ValueError, match=r"^AIROI_LOG_FORMAT must be one of json, text, not 'xml'$"
    ):
        Settings.from_env({"AIROI_LOG_FORMAT": "xml"})
    with pytest.raises(ValueError, match=r"^AIROI_LOG_LEVEL must be one of debug, info, warning"):
        Settings.from_env({"AIROI_LOG_LEVEL": "verbose"})


def test_today_is_the_utc_date_unless_fixed() -> None:
    # SEMANTICS R1
    before = datetime.now(UTC).date()
    today = Settings.from_env({}).current_date()
    assert before <= today <= datetime.now(UTC).date()
    assert Settings.from_env({"AIROI_TODAY": "2027-02-28"}).current_date() == date(2027, 2, 28)
    with pytest.raises(ValueError, match="AIROI_TODAY"):
        Settings.from_env({"AIROI_TODAY": "28/02/2027"})


def test_served_figures_use_airoi_today(
    db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SEMANTICS R1: as_of and the ROI window follow AIROI_TODAY in the served app.
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    b.initiative(acct)
    b.load(engine)
    monkeypatch.setenv("AIROI_DATABASE_URL", db_url)
    monkeypatch.setenv("AIROI_TODAY", "2025-12-31")
    monkeypatch.setenv("AIROI_APP_URL", "https://roi.example.org/")
    app = app_from_env()
    assert app.state.settings.app_url == "https://roi.example.org"
    with TestClient(app) as client:
        row = client.get("/api/v1/budgets", headers=bearer(token)).json()["data"][0]
        assert row["as_of"] == "2025-12-31"
        period = client.get("/api/v1/roi?window=1yr", headers=bearer(token)).json()["period"]
        assert (period["from"], period["through"]) == ("2025-01-01", "2025-12-31")
    app.state.engine.dispose()


def test_the_oauth_rate_limit_is_read_and_bounded() -> None:
    assert Settings.from_env({}).oauth_rate_limit == "60/minute"
    assert Settings.from_env({"AIROI_OAUTH_RATE_LIMIT": "5/second"}).oauth_rate_limit == (
        "5/second"
    )
    for bad in ("often", "0/minute", "5000/second", "2/2 days"):
        with pytest.raises(ValueError, match=r"^AIROI_OAUTH_RATE_LIMIT must read like 60/minute"):
            Settings.from_env({"AIROI_OAUTH_RATE_LIMIT": bad})


@pytest.mark.parametrize("value", ["0001-01-01", "0005-12-31", "9999-01-01", "9999-12-31"])
def test_a_fixed_today_is_one_every_window_and_fiscal_year_can_hold(value: str) -> None:
    # SEMANTICS R1, R8, R23: five years back and the fiscal year around today must be dates.
    with pytest.raises(ValueError, match="from 0006-01-01 to 9998-12-31"):
        Settings.from_env({"AIROI_TODAY": value})
    for edge in ("0006-01-01", "9998-12-31"):
        assert Settings.from_env({"AIROI_TODAY": edge}).current_date() == date.fromisoformat(edge)


PASSWORD = "Sup3rSecretPw"


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("AIROI_REDIS_URL", f"foo://:{PASSWORD}@127.0.0.1:6379/14", "begins foo"),
        ("AIROI_REDIS_URL", f"redis://:{PASSWORD}@127.0.0.1:abc/14", "port that is not a number"),
        (
            "AIROI_REDIS_URL",
            f"redis://:{PASSWORD}@127.0.0.1:6379/notadb",
            "database is not a number",
        ),
        ("AIROI_REDIS_URL", f"redis://:{PASSWORD}@/0", "names no host"),
        ("AIROI_REDIS_URL", "unix://", "names no socket path"),
        (
            "AIROI_REDIS_URL",
            f"redis://:{PASSWORD}@127.0.0.1:6379/0?socket_timeout=abc",
            "cannot use an option of the value set (ValueError)",
        ),
        (
            "AIROI_REDIS_URL",
            f"rediss://:{PASSWORD}@127.0.0.1:6379/0?ssl_cert_reqs=bogus",
            "ssl_cert_reqs is not one of none, optional, required",
        ),
        (
            "AIROI_REDIS_URL",
            f"rediss://:{PASSWORD}@127.0.0.1:6379/0?ssl_cert_reqs=NONE",
            "ssl_cert_reqs is not one of none, optional, required",
        ),
        (
            "AIROI_REDIS_URL",
            f"redis://:{PASSWORD}@127.0.0.1:6379/0?protocol=9",
            "protocol is not 2 or 3",
        ),
        (
            "AIROI_DATABASE_URL",
            f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:abc/rev",
            "not a URL of that form",
        ),
        ("AIROI_DATABASE_URL", f"mysql://root:{PASSWORD}@db/airoi", "names mysql+mysqldb"),
        (
            "AIROI_DATABASE_URL",
            f"postgresql+psycopg2://postgres:{PASSWORD}@db/airoi",
            "names postgresql+psycopg2",
        ),
        ("AIROI_DATABASE_URL", "airoi.db", "not a URL of that form"),
    ],
)
def test_a_store_url_that_cannot_be_used_is_refused_without_its_password(
    name: str, value: str, why: str
) -> None:
    # It was taken as it was: a traceback quoting it at start-up (or, for a Redis database
    # that is no number, counts silently kept in database 0).
    wanted = {
        "AIROI_REDIS_URL": r"^AIROI_REDIS_URL must read like redis://",
        "AIROI_DATABASE_URL": r"^AIROI_DATABASE_URL must be sqlite:///",
    }
    with pytest.raises(ValueError, match=wanted[name]) as refused:
        Settings.from_env({name: value})
    assert why in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_store_urls_of_every_documented_form_are_taken() -> None:
    for value, taken in (
        ("redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/15"),
        (f"redis://:{PASSWORD}@redis.internal", f"redis://:{PASSWORD}@redis.internal"),
        ("rediss://u:pw@redis.example.com:6380/0?ssl_cert_reqs=none", None),
        # A socket, as the rate limiter's library names it: unix:// stopped every start-up
        # with a traceback quoting the URL ("unknown storage scheme").
        ("unix:///run/redis/redis.sock", "redis+unix:///run/redis/redis.sock"),
        (
            f"unix://:{PASSWORD}@/run/redis.sock?db=2",
            f"redis+unix://:{PASSWORD}@/run/redis.sock?db=2",
        ),
    ):
        redis_url = Settings.from_env({"AIROI_REDIS_URL": value}).redis_url
        assert redis_url == (taken or value)
        assert RateLimiter("10/minute", redis_url).shared  # its storage made of it, unconnected
    for value in ("sqlite:////var/lib/airoi.db", "postgresql+psycopg://airoi@db.example.com/a"):
        assert Settings.from_env({"AIROI_DATABASE_URL": value}).database_url == value


def test_a_rate_limit_of_nothing_and_a_public_url_with_a_password_are_refused() -> None:
    # 0/minute answered every request 429, forever; a window of years locked a token out
    # after its one request (Retry-After about 3e19 s); of two limits the second was dropped
    # without a word.
    for value in ("0/minute", "1/1000000000000 years", "1/2 days", "10 per minute; 5/second"):
        with pytest.raises(ValueError, match=r"^AIROI_RATE_LIMIT must read like 600/minute"):
            Settings.from_env({"AIROI_RATE_LIMIT": value})
        with pytest.raises(ValueError, match=r"^AIROI_OAUTH_RATE_LIMIT must read like"):
            Settings.from_env({"AIROI_OAUTH_RATE_LIMIT": value})
    for value in ("600/minute", "10 per second", "5000/day", "1000000000/second"):
        assert Settings.from_env({"AIROI_RATE_LIMIT": value}).rate_limit == value
    for name in ("AIROI_PUBLIC_URL", "AIROI_CORS_ORIGINS"):
        with pytest.raises(ValueError, match="one with a user name before its host") as refused:
            Settings.from_env({name: f"https://user:{PASSWORD}@roi.example.com"})
        assert PASSWORD not in str(refused.value)
