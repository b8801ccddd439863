"""Shipped content as MCP resources: the published help articles and the metric library.

| URI | Content |
| --- | --- |
| `airoi://help/{slug}` | one published help article, its Markdown (`text/markdown`) |
| `airoi://metrics/library` | the canonical metric library (`application/json`) |

Every resource is listed by `resources/list` (sixteen or so: no template is needed to find
them), and none changes while the server runs, so none is subscribable. The content is the
same for every account, but is read through /mcp like everything else there, behind the
token check; a read that reaches the server without a principal (mounted without the
middleware) is refused all the same, as `get_help_article` refuses one.

An unknown URI is a JSON-RPC error -32602 (invalid params, as the SDK answers it) with a
fixed sentence: the URI sent is not repeated (SEMANTICS R15), where the SDK would echo it in
both the message and `data`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import TextResource
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Annotations, InputRequiredResult
from pydantic import AnyUrl

from airoi import catalog
from airoi.auth import Principal
from airoi.tools.protocol_errors import UNAUTHENTICATED

SCHEME: Final = "airoi"
HELP_URI: Final = f"{SCHEME}://help/{{slug}}"
METRIC_LIBRARY_URI: Final = f"{SCHEME}://metrics/library"
MARKDOWN: Final = "text/markdown"
JSON: Final = "application/json"
UNKNOWN_RESOURCE: Final = "No resource has that URI; resources/list names every one."
NO_PRINCIPAL: Final = "This read carries no account; send the bearer token."
# For the user to read and for the assistant to draw on; reference, not required context.
FOR_BOTH: Final = Annotations(audience=["user", "assistant"], priority=0.5)


def help_uri(slug: str) -> str:
    return HELP_URI.format(slug=slug)


def help_resources() -> list[TextResource]:
    """One resource per published article (SEMANTICS R28: drafts are never served)."""
    return [
        TextResource(
            uri=help_uri(article.slug),
            name=article.slug,
            title=article.title,
            description=article.summary,
            mime_type=MARKDOWN,
            annotations=FOR_BOTH,
            text=article.body,
        )
        for article in catalog.help_articles()
    ]


class LibraryMetric(msgspec.Struct):
    key: str
    name: str
    metric_type: str
    unit: str
    category: str
    description: str


class MetricLibrary(msgspec.Struct):
    """The metric library's JSON: the metrics in the catalog's order."""

    metrics: list[LibraryMetric]


def metric_library_json() -> str:
    library = MetricLibrary(
        metrics=[
            LibraryMetric(
                key=m.key,
                name=m.name,
                metric_type=m.metric_type,
                unit=m.unit,
                category=m.category,
                description=m.description,
            )
            for m in catalog.metric_library()
        ]
    )
    return msgspec.json.encode(library).decode()


def metric_library_resource() -> TextResource:
    return TextResource(
        uri=METRIC_LIBRARY_URI,
        name="metric-library",
        title="Metric library",
        description=(
            "The canonical metrics an account's own metrics are keyed by: key, name, type "
            "(count, duration, percentage, currency, ratio, score), unit, category and what "
            "each measures."
        ),
        mime_type=JSON,
        annotations=FOR_BOTH,
        text=metric_library_json(),
    )


def catalog_resources() -> list[TextResource]:
    return [*help_resources(), metric_library_resource()]


def register_resources(server: MCPServer[Any]) -> None:
    """Add every resource of this module to `server` (create_mcp_server's hook)."""
    for resource in catalog_resources():
        server.add_resource(resource)


def _has_principal(context: Context[Any, Any] | None) -> bool:
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # no request context: a read made outside a session
        return False
    scope = getattr(request, "scope", None)
    return isinstance(scope, dict) and isinstance(scope.get("user"), Principal)


class ResourceReading(MCPServer[Any]):
    """MCPServer whose resource reads need the request's principal and whose unknown URI is a
    fixed -32602."""

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        if not _has_principal(context):  # only reachable when mounted without the middleware
            raise MCPError(UNAUTHENTICATED, NO_PRINCIPAL)
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            raise MCPError(INVALID_PARAMS, UNKNOWN_RESOURCE) from None


__all__ = [
    "HELP_URI",
    "METRIC_LIBRARY_URI",
    "ResourceReading",
    "catalog_resources",
    "help_uri",
    "metric_library_json",
    "register_resources",
]
