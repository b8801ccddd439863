"""Requests per person (SPEC 8: over the limit is 429), counted after authentication.

The budget is `AIROI_RATE_LIMIT` (for example 600/minute) per user (SEMANTICS R39): every
personal token of one user and every assistant access token granted through them draw on
one budget, on `/api/v1` and `/mcp` alike, keyed by the user's id (`person_key`), never a
token (SEMANTICS R15); a new token or a refreshed grant opens no fresh budget. The OAuth
routes count unauthenticated posts per client address the same way. It lives in this process's
memory, or in Redis when `AIROI_REDIS_URL` is set, so that several workers share
one budget. A fixed window starting at a token's first request in it: one counter
and one expiry per token.

In memory the windows are a dict of this process (`LocalWindows`), not `limits`' memory
storage: that one starts a timer thread to expire keys every time the last has finished,
about every 10 ms on a busy worker, and the thread runs on the worker's own core.
Measured with `bench.ceiling`'s setup (one worker pinned to a core, wrk on the other), the
check cost a limit-100 page about 55 microseconds; see CHANGELOG.

Redis is asked off the event loop (a small pool of threads), connecting and each
round trip given `STORE_TIMEOUT_S`: a store that is slow or frozen costs the requests
asking it that long (a round trip or two) at most, never the worker's other requests.
A store that fails or does not answer in time is taken as away for `STORE_RETRY_S`:
requests are counted in this process's memory meanwhile, as without Redis, then one
request asks the store again. One warning when it goes, one line when it answers again.
Counting in memory rather than not at all keeps the limit protecting the service through
an outage (each worker with its own budget, so N workers let a token make up to N times
the limit), and a caller loses nothing by it: its count starts afresh.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import Storage, storage_from_string

NAMESPACE = "airoi:token"  # the keys' prefix in Redis, as before the budget became a person's


def person_key(user_id: int) -> str:
    """The budget's key of the user a request's token acts for (SEMANTICS R39)."""
    return f"user:{user_id}"


# A counter store that does not answer at once is treated as away (connecting, a round trip).
STORE_TIMEOUT_S = 0.25
# A call is a connection and two round trips at most, each bounded by the timeout.
_BACKSTOP_S = 4 * STORE_TIMEOUT_S
# How long a store taken as away is left alone before one request asks it again.
STORE_RETRY_S = 5.0
# Threads asking the store: a call is a round trip or two, so a few serve a busy worker.
_STORE_THREADS = 4

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
    def __init__(
        self, rate: str, redis_url: str | None = None, *, retry_s: float = STORE_RETRY_S
    ) -> None:
        self.item: RateLimitItem = parse(rate)
        # Counts without Redis, and while Redis is taken as away.
        self.local = LocalWindows()
        self.storage: Storage | None = None
        self.outages = 0
        self._retry_s = retry_s
        self._away = False
        self._asking_again = False
        self._retry_at = 0.0
        self._threads: ThreadPoolExecutor | None = None
        # Whether requests are counted in Redis (and so wait for it off the event loop).
        self.shared = bool(redis_url)
        if redis_url:
            storage = storage_from_string(
                redis_url,
                wrap_exceptions=True,
                socket_connect_timeout=STORE_TIMEOUT_S,
                socket_timeout=STORE_TIMEOUT_S,
            )
            assert isinstance(storage, Storage)  # the synchronous kind, for this URL
            self.storage = storage
            self._threads = ThreadPoolExecutor(_STORE_THREADS, thread_name_prefix="airoi-ratelimit")

    async def hit(
        self, token_hash: str, *, where: str = "", request_id: str | None = None
    ) -> Standing:
        """Count one request of the token: in Redis when it is set and answers, else here
        (an outage logged once, by its class, with the route and request id of `where` and
        `request_id` of the request that met it).

        In Redis, the fixed window of `limits`' FixedWindowRateLimiter, with the count the
        increment returns used as it is: two calls to the store (two Redis round trips),
        where the strategy's hit and window statistics take three.
        """
        if self._threads is None or not self._asks_store():
            return self.hit_here(token_hash)
        asking_again = self._away  # only this request's answer says the store is back
        key = self.item.key_for(NAMESPACE, token_hash)
        asked = asyncio.get_running_loop().run_in_executor(self._threads, self._store_hit, key)
        # The socket timeouts bound the call in its thread. This wait is a backstop, and the
        # call's own outcome is taken when it has one: the loop may have been held past the
        # backstop by other work (a statement), which says nothing of the store.
        try:
            await asyncio.wait([asked], timeout=_BACKSTOP_S)
            if not asked.done():
                asked.cancel()
                raise TimeoutError
            count, reset_at = asked.result()
        except (StorageError, TimeoutError) as exc:
            self._store_failed(exc, where, request_id)
            return self.hit_here(token_hash)
        except BaseException:
            # Cancelled (a client gone, a shutdown) or failed otherwise: the next request may
            # ask again, or the store would never be asked again.
            self._asking_again = False
            raise
        if asking_again:
            self._store_answered()
        return self._standing(count, reset_at)

    def hit_here(self, token_hash: str) -> Standing:
        """Count one request of the token in this process's memory."""
        key = self.item.key_for(NAMESPACE, token_hash)
        count, reset_at = self.local.hit(key, self.item.get_expiry())
        return self._standing(count, reset_at)

    def _store_hit(self, key: str) -> tuple[int, float]:
        assert self.storage is not None
        count = self.storage.incr(key, self.item.get_expiry())
        return count, self.storage.get_expiry(key)

    # The state below is read and changed on the event loop only (no lock).
    def _asks_store(self) -> bool:
        """Whether this request asks the store: always, unless it is taken as away; then
        one request once `retry_s` has passed since it last failed."""
        if not self._away:
            return True
        if self._asking_again or time.monotonic() < self._retry_at:
            return False
        self._asking_again = True
        return True

    def _store_failed(self, exc: Exception, where: str, request_id: str | None) -> None:
        self._asking_again = False
        self._retry_at = time.monotonic() + self._retry_s
        if self._away:
            return
        self._away = True
        self.outages += 1
        cause = exc.storage_error if isinstance(exc, StorageError) else exc
        logger.warning(
            "rate limit store unreachable on %s (request %s), not answering (%s); counting in "
            "this process's memory meanwhile",
            where or "-",
            request_id,
            type(cause).__name__,
        )

    def _store_answered(self) -> None:
        # A request sent before the store went away may come back after: it says nothing.
        self._away = self._asking_again = False
        logger.warning("rate limit store answers again; counting there")

    def _standing(self, count: int, reset_at: float) -> Standing:
        return Standing(
            allowed=count <= self.item.amount,
            limit=self.item.amount,
            remaining=max(0, self.item.amount - count),
            reset_at=reset_at,
        )
