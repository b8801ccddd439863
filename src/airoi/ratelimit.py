"""Requests per token (SPEC 8: over the limit is 429), counted after authentication.

The budget is `AIROI_RATE_LIMIT` (for example 600/minute) per token, keyed by the
token's hash, never the token itself (SEMANTICS R15). It lives in this process's
memory, or in Redis when `AIROI_REDIS_URL` is set, so that several workers share
one budget. A fixed window starting at a token's first request in it: one counter
and one expiry per token.

In memory the windows are a dict of this process (`LocalWindows`), not `limits`' memory
storage: that one starts a timer thread to expire keys every time the last has finished,
about every 10 ms on a busy worker, and the thread runs on the worker's own core.
Measured with `bench.ceiling`'s setup (one worker pinned to a core, wrk on the other), the
check cost a limit-100 page about 55 microseconds; see CHANGELOG.

When Redis cannot be reached the request is served without counting (and
without rate-limit headers) and a warning is logged: a read-only service stays
up rather than refuse everyone because its counter store is away.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import Storage, storage_from_string

NAMESPACE = "airoi:token"
# A counter store that does not answer at once is treated as away.
_REDIS_TIMEOUT_SECONDS = 0.5

logger = logging.getLogger("airoi.ratelimit")


@dataclass(frozen=True)
class Standing:
    """A token's budget after counting one request."""

    allowed: bool
    limit: int
    remaining: int
    reset_at: float  # epoch seconds when the window ends

    def seconds_to_reset(self, now: float | None = None) -> int:
        return max(1, math.ceil(self.reset_at - (time.time() if now is None else now)))

    def headers(self, now: float | None = None) -> dict[str, str]:
        """IETF draft `RateLimit-*` (Reset in seconds from now) and the older `X-RateLimit-*`
        (Reset as an epoch second, as GitHub and most clients read it)."""
        remaining = str(max(0, self.remaining))
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": remaining,
            "RateLimit-Reset": str(self.seconds_to_reset(now)),
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": remaining,
            "X-RateLimit-Reset": str(math.ceil(self.reset_at)),
        }


class LocalWindows:
    """Fixed windows in this process's memory: per key a count and the moment its window ends.

    The semantics of `limits`' memory storage (a window starts at the first request after
    the last one ended), without its timer thread: ended windows are dropped by a sweep that
    runs on a request at most once a window's length.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, list[float]] = {}
        self._next_sweep = 0.0

    def __len__(self) -> int:
        return len(self._windows)

    def hit(self, key: str, seconds: float) -> tuple[int, float]:
        """Count one request under `key`; the count in its window and when the window ends."""
        now = self._clock()
        with self._lock:
            if now >= self._next_sweep:
                self._windows = {k: w for k, w in self._windows.items() if w[1] > now}
                self._next_sweep = now + seconds
            window = self._windows.get(key)
            if window is None or window[1] <= now:
                window = self._windows[key] = [0, now + seconds]
            window[0] += 1
            return int(window[0]), window[1]


class RateLimiter:
    def __init__(self, rate: str, redis_url: str | None = None) -> None:
        self.item: RateLimitItem = parse(rate)
        self.storage: Storage | None = None
        self.local: LocalWindows | None = None
        if redis_url:
            storage = storage_from_string(
                redis_url,
                wrap_exceptions=True,
                socket_connect_timeout=_REDIS_TIMEOUT_SECONDS,
                socket_timeout=_REDIS_TIMEOUT_SECONDS,
            )
            assert isinstance(storage, Storage)  # the synchronous kind, for this URL
            self.storage = storage
        else:
            self.local = LocalWindows()

    def hit(
        self, token_hash: str, *, where: str = "", request_id: str | None = None
    ) -> Standing | None:
        """Count one request of the token; None when the counter store cannot be reached
        (logged by its class, with the route and request id of `where` and `request_id`).

        In Redis, the fixed window of `limits`' FixedWindowRateLimiter, with the count the
        increment returns used as it is: two calls to the store (two Redis round trips),
        where the strategy's hit and window statistics take three.
        """
        key = self.item.key_for(NAMESPACE, token_hash)
        if self.local is not None:
            count, reset_at = self.local.hit(key, self.item.get_expiry())
            return self._standing(count, reset_at)
        assert self.storage is not None
        try:
            count = self.storage.incr(key, self.item.get_expiry())
            reset_at = self.storage.get_expiry(key)
        except StorageError as exc:
            logger.warning(
                "rate limit store unreachable on %s (request %s), request not counted: %s",
                where or "-",
                request_id,
                type(exc.storage_error).__name__,
            )
            return None
        return self._standing(count, reset_at)

    def _standing(self, count: int, reset_at: float) -> Standing:
        return Standing(
            allowed=count <= self.item.amount,
            limit=self.item.amount,
            remaining=max(0, self.item.amount - count),
            reset_at=reset_at,
        )
