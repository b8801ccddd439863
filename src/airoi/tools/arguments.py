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

JSON null given for an optional argument is taken as the argument omitted, for every optional
argument alike (its default applies), and each one's inputSchema says null is accepted.

A result's text content is two blocks: one line saying what it holds, amounts as formatted
money (the tool's `summary`), then the structured content as compact JSON, unchanged.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from copy import copy
from typing import Annotated, Any, Optional, Union, cast, get_args, get_origin

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, WithJsonSchema, create_model

from airoi.tools.summaries import neutralised

STRICT = ConfigDict(extra="forbid", strict=True)

# The line said before a result's JSON: made from the tool's returned result model.
Summary = Callable[[Any], str]


class StrictFuncMetadata(FuncMetadata):
    """The SDK's argument handling, with each value validated as it was sent."""

    summary: Annotated[Any, WithJsonSchema(None)] = None

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        # The SDK would json.loads a string given for a non-string argument ("null" became
        # None, '["page"]' a list); a string is a string (SEMANTICS R12: no coercion).
        # A JSON null for an optional argument is that argument omitted: its default applies.
        fields = self.arg_model.model_fields
        return {
            name: value
            for name, value in data.items()
            if not (value is None and name in fields and not fields[name].is_required())
        }

    def convert_result(self, result: Any) -> CallToolResult | InputRequiredResult:
        converted = super().convert_result(result)
        if not isinstance(converted, CallToolResult) or converted.structured_content is None:
            return converted
        compact = json.dumps(
            converted.structured_content, separators=(",", ":"), ensure_ascii=False
        )
        content = [TextContent(type="text", text=compact)]
        if self.summary is not None:
            # Stored text in the line is quoted by each summary; what else reaches it is
            # neutralised here, so the line stays one line that reads as it is.
            line = neutralised(self.summary(result))
            content.insert(0, TextContent(type="text", text=line))
        return converted.model_copy(update={"content": content})


def _takes_null(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return _takes_null(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return type(None) in get_args(annotation)
    return annotation is None or annotation is type(None)


def strict_model(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """The same fields, refusing undeclared names and values of another JSON type; every
    optional one also takes null (meaning omitted, see `StrictFuncMetadata.pre_parse_json`)."""
    namespace = {"model_config": STRICT, "__module__": __name__}
    strict = cast(type[ArgModelBase], type(model.__name__, (model,), namespace))
    nullable: dict[str, Any] = {}
    for name, field in strict.model_fields.items():
        if field.is_required() or _takes_null(field.annotation):
            continue
        info = copy(field)
        annotation: Any = Optional[field.annotation]  # noqa: UP045 (a value here)
        info.annotation = annotation
        nullable[name] = (annotation, info)
    if not nullable:
        return strict
    return cast(
        type[ArgModelBase],
        create_model(model.__name__, __base__=strict, __module__=__name__, **nullable),
    )


def strict_tool(
    fn: Callable[..., Any],
    *,
    name: str,
    title: str,
    description: str,
    annotations: ToolAnnotations,
    summary: Summary | None = None,
) -> Tool:
    """`fn` as a structured-output tool whose arguments are checked strictly, its text
    content the line `summary` makes of its result and the compact JSON."""
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
        summary=summary,
    )
    return tool.model_copy(
        update={"fn_metadata": metadata, "parameters": arguments.model_json_schema(by_alias=True)}
    )


def argument_names(tool: Tool) -> tuple[str, ...]:
    """The names a tool's inputSchema declares, in its order."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    return tuple(properties)
