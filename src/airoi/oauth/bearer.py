"""Who is asking at /mcp: a personal access token as anywhere, or an OAuth access token.

An OAuth access token acts as the personal token it was issued against (SPEC 5.2): it is
refused as soon as that token is revoked or expires or its user is removed, as the token
itself would be (SEMANTICS R29), and when it was issued for another resource (RFC 8707: its
audience is this server's /mcp, as the request reached it). The HTTP API never takes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, select

from airoi.auth import (
    INVALID_TOKEN,
    REALM,
    Principal,
    authenticate,
    bearer_secret,
    holder_refusal,
    unauthorized,
)
from airoi.db.prepared import Prepared
from airoi.db.tables import accounts, oauth_tokens, tokens, users
from airoi.errors import ApiError
from airoi.oauth.store import ACCESS_PREFIX, digest
from airoi.oauth.urls import base_url, resource_metadata_url
from airoi.settings import Settings
from airoi.timeutil import utc_now

_ACCESS_LOOKUP = Prepared(
    select(
        oauth_tokens.c.expires_at,
        oauth_tokens.c.resource,
        tokens.c.expires_at.label("pat_expires_at"),
        tokens.c.revoked_at,
        users.c.id.label("user_id"),
        users.c.removed_at,
        users.c.role,
        accounts.c.id.label("account_id"),
        accounts.c.api_access,
        accounts.c.currency,
        accounts.c.fiscal_year_start_month,
    )
    .join(tokens, tokens.c.token_hash == oauth_tokens.c.pat_hash)
    .join(users, users.c.id == tokens.c.user_id)
    .join(accounts, accounts.c.id == users.c.account_id)
    .where(
        oauth_tokens.c.token_hash == bindparam("token_hash"),
        oauth_tokens.c.kind == "access",
    )
)


def challenge(scope: Mapping[str, Any], settings: Settings, *, invalid_token: bool) -> str:
    """/mcp's WWW-Authenticate: the realm, the refused token's error code (RFC 6750 3.1),
    and where its protected resource metadata is (RFC 9728, 5.1), so an OAuth client can
    find how to get a token."""
    said = f"{REALM}, {INVALID_TOKEN}" if invalid_token else REALM
    base = base_url(scope, settings)
    if base is None:
        return said
    return f'{said}, resource_metadata="{resource_metadata_url(base)}"'


def _refused(message: str) -> ApiError:
    return unauthorized(message, invalid_token=True)


def authenticate_mcp(
    conn: Connection,
    authorization: str | None,
    resource: str | None,
    *,
    now: datetime | None = None,
) -> Principal:
    """The principal of a request to /mcp whose resource identifier is `resource`."""
    secret = bearer_secret(authorization)
    if not secret.startswith(ACCESS_PREFIX):
        return authenticate(conn, authorization, now=now)
    row = _ACCESS_LOOKUP.first(conn, {"token_hash": digest(secret)})
    if row is None:
        raise _refused("The token is not valid.")
    (
        expires_at,
        issued_for,
        pat_expires_at,
        revoked_at,
        user_id,
        removed_at,
        role,
        account_id,
        api_access,
        currency,
        fy_start,
    ) = row
    now = now or utc_now()
    if expires_at <= now:
        raise _refused("The token has expired.")
    if resource is None or issued_for != resource:
        raise _refused("The token was issued for another resource.")
    if revoked_at is not None:
        raise _refused("The personal access token behind this token has been revoked.")
    if pat_expires_at is not None and pat_expires_at <= now:
        raise _refused("The personal access token behind this token has expired.")
    refusal = holder_refusal(None, None, removed_at, role, now)
    if refusal is not None:
        raise _refused(refusal)
    if not api_access:
        raise ApiError(403, "This account's plan does not include API access.")
    return Principal(
        account_id=account_id,
        user_id=user_id,
        account_currency=currency,
        fiscal_year_start_month=fy_start,
    )
