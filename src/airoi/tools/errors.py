"""Tool refusals (SEMANTICS R27): one sentence for the assistant, never a crash.

A tool raises `ToolRefusal` for a bad argument it detects itself (an id the account
cannot see, a query too short once trimmed, neither slug nor id). Arguments that fail
the input schema are turned into one sentence by `validation_sentence`.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

SHOWN_NAME_LENGTH = 60

# The JSON type each strict check wants (SEMANTICS R12: a value of the wrong type is refused).
_WANTED_TYPE = {
    "int_type": "an integer",
    "string_type": "a string",
    "list_type": "an array",
    "bool_type": "true or false",
}


class ToolRefusal(ToolError):
    """A bad argument: the call answers isError with this one sentence."""


def _argument_name(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "arguments"


def _shown(name: str) -> str:
    """A caller's name quoted on one line (repr escapes newlines) and cut to a readable length."""
    if len(name) > SHOWN_NAME_LENGTH:
        name = name[: SHOWN_NAME_LENGTH - 1] + "…"
    return repr(name)


def validation_sentence(exc: ValidationError, accepted: Sequence[str] = ()) -> str:
    """The first problem of a failed argument check, as one sentence naming the argument.

    `accepted` lists the tool's declared arguments, named when one it does not declare is
    given (as the HTTP API names its parameters, SEMANTICS R12).
    """
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "The arguments are not valid."
    first = errors[0]
    name = _argument_name(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        known = (
            f"this tool accepts: {', '.join(accepted)}"
            if accepted
            else "this tool takes no arguments"
        )
        return f"Unknown argument {_shown(name)}; {known}."
    if kind == "missing":
        return f"The {name} argument is required."
    if kind in _WANTED_TYPE:
        return f"The {name} argument must be {_WANTED_TYPE[kind]}."
    if name == "query" and kind == "string_too_short":
        return "The query must be at least 2 characters long."
    detail = str(first.get("msg", "is not valid")).rstrip(".")
    return f"The {name} argument is not valid: {detail}."
