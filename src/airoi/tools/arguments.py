"""Strict tool arguments (SEMANTICS R12, R27), on the argument model the SDK derives.

The SDK builds each tool's argument model from the function's signature and validates it
leniently: a name the tool does not declare is dropped, so `{"initiativeId": 7}` answered
for the whole portfolio; "7" and true are read as integers; and a string holding JSON is
parsed before validation, so `"null"` became an omitted argument. As the HTTP API refuses
such parameters with 400 (R12), a tool refuses such arguments with one sentence (R27).

`strict_tool` registers a function as the SDK does and then swaps in the same model with
`extra="forbid"` and `strict=True`, so unknown names and wrong JSON types fail the one
pydantic validation the SDK already runs (and the advertised inputSchema says
`additionalProperties: false`). A JSON integer stays an integer; 5.0, "5" and true do not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid", strict=True)


class StrictFuncMetadata(FuncMetadata):
    """The SDK's argument handling, with each value validated as it was sent."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        # The SDK would json.loads a string given for a non-string argument ("null" became
        # None, '["page"]' a list); a string is a string (SEMANTICS R12: no coercion).
        return dict(data)


def strict_model(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """The same fields, refusing undeclared names and values of another JSON type."""
    namespace = {"model_config": STRICT, "__module__": __name__}
    return cast(type[ArgModelBase], type(model.__name__, (model,), namespace))


def strict_tool(
    fn: Callable[..., Any],
    *,
    name: str,
    title: str,
    description: str,
    annotations: ToolAnnotations,
) -> Tool:
    """`fn` as a structured-output tool whose arguments are checked strictly."""
    tool = Tool.from_function(
        fn,
        name=name,
        title=title,
        description=description,
        annotations=annotations,
        structured_output=True,
    )
    lenient = tool.fn_metadata
    arguments = strict_model(lenient.arg_model)
    metadata = StrictFuncMetadata(
        arg_model=arguments,
        output_schema=lenient.output_schema,
        output_model=lenient.output_model,
        wrap_output=lenient.wrap_output,
    )
    return tool.model_copy(
        update={"fn_metadata": metadata, "parameters": arguments.model_json_schema(by_alias=True)}
    )


def argument_names(tool: Tool) -> tuple[str, ...]:
    """The names a tool's inputSchema declares, in its order."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    return tuple(properties)
