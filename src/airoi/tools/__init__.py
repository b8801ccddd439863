"""The tool endpoint for assistants (SPEC 4.B): an MCP server at /mcp over the same account data."""

from airoi.tools.server import (
    MCP_METHODS,
    MCP_PATH,
    McpEndpoint,
    create_mcp_server,
    mcp_endpoint,
)

__all__ = ["MCP_METHODS", "MCP_PATH", "McpEndpoint", "create_mcp_server", "mcp_endpoint"]
