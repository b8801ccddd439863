"""Tool refusals (SEMANTICS R27): one sentence for the assistant, never a crash.

A tool raises `ToolRefusal` for a bad argument it detects itself (an id the account
cannot see, a query too short once trimmed, neither slug nor id). Arguments that fail
the input schema are turned into one sentence by `validation_sentence`.
"""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError


class ToolRefusal(ToolError):
    """A bad argument: the call answers isError with this one sentence."""


def _argument_name(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "arguments"


def validation_sentence(exc: ValidationError) -> str:
    """The first problem of a failed argument check, as one sentence naming the argument."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "The arguments are not valid."
    first = errors[0]
    name = _argument_name(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    if kind == "missing":
        return f"The {name} argument is required."
    if name == "query" and kind == "string_too_short":
        return "The query must be at least 2 characters long."
    detail = str(first.get("msg", "is not valid")).rstrip(".")
    return f"The {name} argument is not valid: {detail}."
