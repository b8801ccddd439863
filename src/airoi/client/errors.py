"""The one exception type the client raises (SPEC 7's error body, as a Python exception)."""

from __future__ import annotations

from typing import Any


class AiroiError(Exception):
    """A request the service refused or could not answer.

    `status` is the HTTP status (0 when no response arrived at all), `message` the
    service's one sentence, `request_id` the id the service gave the request, when it
    gave one (an `X-Request-Id` header or `error.request_id` in the body), and `body`
    the decoded error body, when there was one.
    """

    def __init__(
        self,
        status: int,
        message: str,
        request_id: str | None = None,
        *,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(status, message, request_id)
        self.status = status
        self.message = message
        self.request_id = request_id
        self.body = body

    def __str__(self) -> str:
        suffix = f" (request {self.request_id})" if self.request_id else ""
        # Status 0 is no response at all: there is no status to show.
        prefix = f"{self.status}: " if self.status else ""
        return f"{prefix}{self.message}{suffix}"
