"""One Settings object, read from the environment (AIROI_*)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime

DEFAULT_DATABASE_URL = "sqlite:///airoi.db"
DEFAULT_RATE_LIMIT = "600/minute"


def _today_from_env(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(
            f"AIROI_TODAY must be an ISO date such as 2026-03-31, not {value!r}"
        ) from exc


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    today: date | None = None
    rate_limit: str = DEFAULT_RATE_LIMIT
    app_url: str = "http://localhost:8000"
    redis_url: str | None = None
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        hosts = tuple(h.strip() for h in env.get("AIROI_ALLOWED_HOSTS", "").split(",") if h.strip())
        return cls(
            database_url=env.get("AIROI_DATABASE_URL") or DEFAULT_DATABASE_URL,
            today=_today_from_env(env.get("AIROI_TODAY")),
            rate_limit=env.get("AIROI_RATE_LIMIT") or DEFAULT_RATE_LIMIT,
            app_url=(env.get("AIROI_APP_URL") or "http://localhost:8000").rstrip("/"),
            redis_url=env.get("AIROI_REDIS_URL") or None,
            allowed_hosts=hosts,
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def current_date(self) -> date:
        """SEMANTICS R1: today is the UTC date unless AIROI_TODAY fixes it."""
        return self.today or datetime.now(UTC).date()
