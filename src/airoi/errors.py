"""One error type and one error body (SPEC 7): `{"error": {"status": ..., "message": ...}}`,
plus `request_id` (added, SPEC 9: consumers tolerate added fields)."""

from __future__ import annotations

from typing import Annotated

import msgspec


class ApiError(Exception):
    """A refusal the client should see: its HTTP status and one sentence saying what went wrong."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class ErrorDetail(msgspec.Struct, omit_defaults=True):
    status: Annotated[
        int, msgspec.Meta(ge=100, le=599, description="The HTTP status of the answer.")
    ]
    message: Annotated[str, msgspec.Meta(description="One sentence saying what went wrong.")]
    # The X-Request-Id of the request, so a report can be matched to its log line.
    request_id: Annotated[
        str | None,
        msgspec.Meta(description="The X-Request-Id of the request, to match it to its log line."),
    ] = None


class ErrorBody(msgspec.Struct):
    error: ErrorDetail


def bad_parameter(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(what: str) -> ApiError:
    return ApiError(404, f"No {what} with that id in this account.")
