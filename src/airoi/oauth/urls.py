"""Where this service is reached: the OAuth issuer and /mcp's resource identifier.

AIROI_PUBLIC_URL fixes it. Unset, each request's own scheme and Host make it, when the Host is
one the service is served under (those /mcp's DNS-rebinding check takes: loopback names,
AIROI_ALLOWED_HOSTS, AIROI_APP_URL's host); any other Host gets no OAuth answers, so a forged
Host cannot make the metadata point elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from airoi.auth import INVALID_TOKEN, REALM
from airoi.settings import Settings

MCP_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
_HOST = re.compile(r"([a-z0-9.-]{1,253}|\[[0-9a-f:.]{2,45}\])(:[0-9]{1,5})?")
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def served_hosts(settings: Settings) -> frozenset[str]:
    names = {*LOOPBACK, *(h.lower() for h in settings.allowed_hosts)}
    app_host = urlsplit(settings.app_url).hostname
    if app_host:
        names.add(app_host.lower())
    return frozenset(names)


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def base_url(scope: Mapping[str, Any], settings: Settings) -> str | None:
    """`scheme://host[:port]` of this service for the request of `scope`, or None when its
    Host is not one the service is served under."""
    if settings.public_url:
        return settings.public_url
    host = (_header(scope, b"host") or "").strip().lower()
    match = _HOST.fullmatch(host)
    if match is None:
        return None
    names = served_hosts(settings)
    if "*" not in names and match.group(1) not in names:
        return None
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return f"{scheme}://{host}"


def resource_of(base: str) -> str:
    """The resource identifier (RFC 8707) tokens for /mcp are bound to."""
    return base + MCP_PATH


def resource_metadata_url(base: str) -> str:
    return base + PROTECTED_RESOURCE_PATH + MCP_PATH


def challenge(scope: Mapping[str, Any], settings: Settings, *, invalid_token: bool) -> str:
    """/mcp's WWW-Authenticate: the realm, the refused token's error code (RFC 6750 3.1),
    and where its protected resource metadata is (RFC 9728, 5.1), so an OAuth client can
    find how to get a token."""
    said = f"{REALM}, {INVALID_TOKEN}" if invalid_token else REALM
    base = base_url(scope, settings)
    if base is None:
        return said
    return f'{said}, resource_metadata="{resource_metadata_url(base)}"'
