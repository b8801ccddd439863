"""Grants: the access and refresh tokens a code's exchange issues under a personal token,
rotated at each refresh, ended together by a revocation or by a replay of their code or of a
used refresh token.

At most MAX_GRANTS_PER_TOKEN live grants per personal token (the oldest ends), access tokens
live ACCESS_SECONDS, refresh tokens REFRESH_SECONDS; expired rows are removed as new ones are
written. A token is issued only while its personal token is usable and its account's plan
includes API access, as /mcp would take it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mcp.server.auth.provider import AccessToken, RefreshToken, TokenError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from sqlalchemy import Connection, and_, delete, func, insert, select, update
from sqlalchemy.sql import Select

from airoi.auth import holder_refusal
from airoi.db.tables import accounts, oauth_codes, oauth_tokens, tokens, users
from airoi.oauth.clients import SCOPE
from airoi.oauth.codes import USED_CODE, PendingCode
from airoi.oauth.writer import GrantRefused, OAuthWriter, digest, epoch_of, moment_of, new_secret
from airoi.timeutil import utc_now
from airoi.tokens import ACCESS_PREFIX

MAX_GRANTS_PER_TOKEN = 50
ACCESS_SECONDS = 3_600
REFRESH_SECONDS = 30 * 86_400
# Tells a refresh token apart (from a code, "airoi-ac_", and a personal token, "airoi_") in a
# log or a paste.
REFRESH_PREFIX = "airoi-rt_"
TOKEN_KINDS = ("access", "refresh")


class HeldRefreshToken(RefreshToken):
    pat_hash: str
    grant_id: str


# The `resource` parameters (RFC 8707) of the token request being answered, set by the token
# endpoint (airoi.oauth.routes): the SDK's handler does not pass them on.
requested_resources: ContextVar[tuple[str, ...]] = ContextVar(
    "airoi_oauth_requested_resources", default=()
)


def check_target(granted: str) -> None:
    """RFC 8707: a token request naming a resource names the one its grant was made for."""
    for resource in requested_resources.get():
        if resource.rstrip("/") != granted.rstrip("/"):
            raise TokenError("invalid_target", f"The resource must be {granted}.")


@dataclass(frozen=True)
class Holder:
    """The personal token behind a grant, as it stands now."""

    user_id: int
    account_id: int
    usable: bool  # not revoked, not expired, its user not removed and an Owner or Admin
    api_access: bool


def _holder_query() -> Select[Any]:
    return (
        select(
            tokens.c.expires_at,
            tokens.c.revoked_at,
            users.c.id,
            users.c.removed_at,
            users.c.role,
            accounts.c.id,
            accounts.c.api_access,
        )
        .join(users, users.c.id == tokens.c.user_id)
        .join(accounts, accounts.c.id == users.c.account_id)
    )


def holder_of(conn: Connection, pat_hash: str, now: datetime) -> Holder | None:
    row = conn.execute(_holder_query().where(tokens.c.token_hash == pat_hash)).first()
    if row is None:
        return None
    expires_at, revoked_at, user_id, removed_at, role, account_id, api_access = row
    usable = holder_refusal(revoked_at, expires_at, removed_at, role, now) is None
    return Holder(user_id, account_id, usable, bool(api_access))


class Grants:
    """The grants in oauth_tokens: the access and refresh tokens a code's exchange issues,
    rotated at each refresh, ended together.

    `resource` says, for the request being answered, the resource identifier of its /mcp.
    """

    def __init__(self, writer: OAuthWriter, resource: Callable[[], str]) -> None:
        self._writer = writer
        self._resource = resource

    # --- issuing -----------------------------------------------------------------------

    async def exchange_code(
        self, client: OAuthClientInformationFull, authorization_code: PendingCode
    ) -> OAuthToken:
        check_target(authorization_code.resource or self._resource())

        def write(conn: Connection) -> OAuthToken:
            # One use: the code is gone before tokens are made, so two exchanges of it
            # (two workers) cannot both succeed.
            taken = conn.execute(
                delete(oauth_codes).where(
                    oauth_codes.c.code_hash == digest(authorization_code.code)
                )
            )
            if taken.rowcount != 1:
                raise GrantRefused(
                    TokenError("invalid_grant", "The authorization code has been used.")
                )
            grant_id = secrets.token_hex(16)
            issued = self._issue_tokens(
                conn,
                client.client_id,
                authorization_code.pat_hash,
                authorization_code.resource or self._resource(),
                grant_id,
            )
            # The code's hash is kept with the grant until the code would have expired, to
            # tell a replay of it (AuthorizationCodes.load); it is never taken as a token.
            conn.execute(
                insert(oauth_tokens).values(
                    token_hash=digest(authorization_code.code),
                    kind=USED_CODE,
                    grant_id=grant_id,
                    client_id=client.client_id,
                    pat_hash=authorization_code.pat_hash,
                    resource=authorization_code.resource or self._resource(),
                    scopes=SCOPE,
                    expires_at=moment_of(authorization_code.expires_at),
                    used_at=utc_now(),
                )
            )
            return issued

        return await self._writer.transaction(write)

    def _issue_tokens(
        self, conn: Connection, client_id: str, pat_hash: str, resource: str, grant_id: str
    ) -> OAuthToken:
        now = utc_now()
        holder = holder_of(conn, pat_hash, now)
        if holder is None or not holder.usable:
            raise GrantRefused(
                TokenError("invalid_grant", "The personal access token is no longer valid.")
            )
        if not holder.api_access:
            # As /mcp would answer the tokens (403): none is issued that could not be used.
            raise GrantRefused(
                TokenError("invalid_grant", "This account's plan does not include API access.")
            )
        conn.execute(delete(oauth_tokens).where(oauth_tokens.c.expires_at < now))
        grants = conn.execute(
            select(oauth_tokens.c.grant_id, func.min(oauth_tokens.c.expires_at))
            .where(
                oauth_tokens.c.pat_hash == pat_hash,
                oauth_tokens.c.grant_id != grant_id,
                oauth_tokens.c.kind.in_(TOKEN_KINDS),
            )
            .group_by(oauth_tokens.c.grant_id)
            .order_by(func.min(oauth_tokens.c.expires_at))
        ).all()
        surplus = len(grants) - (MAX_GRANTS_PER_TOKEN - 1)
        if surplus > 0:
            oldest = [row[0] for row in grants[:surplus]]
            conn.execute(delete(oauth_tokens).where(oauth_tokens.c.grant_id.in_(oldest)))
        access, refresh = new_secret(ACCESS_PREFIX), new_secret(REFRESH_PREFIX)
        common = {
            "grant_id": grant_id,
            "client_id": client_id,
            "pat_hash": pat_hash,
            "resource": resource,
            "scopes": SCOPE,
            "used_at": None,
        }
        conn.execute(
            insert(oauth_tokens),
            [
                {
                    **common,
                    "token_hash": digest(access),
                    "kind": "access",
                    "expires_at": now + timedelta(seconds=ACCESS_SECONDS),
                },
                {
                    **common,
                    "token_hash": digest(refresh),
                    "kind": "refresh",
                    "expires_at": now + timedelta(seconds=REFRESH_SECONDS),
                },
            ],
        )
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_SECONDS,
            refresh_token=refresh,
            scope=SCOPE,
        )

    # --- refresh (rotating) ------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> HeldRefreshToken | None:
        def read(conn: Connection) -> HeldRefreshToken | None:
            row = conn.execute(
                select(oauth_tokens).where(
                    oauth_tokens.c.token_hash == digest(refresh_token),
                    oauth_tokens.c.kind == "refresh",
                    oauth_tokens.c.client_id == client.client_id,
                )
            ).first()
            if row is None:
                return None
            if row.used_at is not None:
                # Presented again after it was exchanged: someone else holds a copy. The
                # whole grant ends (OAuth 2.1, 4.3.1).
                conn.execute(delete(oauth_tokens).where(oauth_tokens.c.grant_id == row.grant_id))
                return None
            return HeldRefreshToken(
                token=refresh_token,
                client_id=row.client_id,
                scopes=row.scopes.split(),
                expires_at=epoch_of(row.expires_at),
                resource=row.resource,
                pat_hash=row.pat_hash,
                grant_id=row.grant_id,
            )

        return await self._writer.transaction(read)

    async def refresh(
        self, client: OAuthClientInformationFull, refresh_token: HeldRefreshToken
    ) -> OAuthToken:
        check_target(refresh_token.resource or self._resource())

        def write(conn: Connection) -> OAuthToken:
            # Only the grant's latest used refresh token is kept (to tell a replay of it), so
            # a grant holds two refresh tokens at most, however often it is refreshed.
            conn.execute(
                delete(oauth_tokens).where(
                    oauth_tokens.c.grant_id == refresh_token.grant_id,
                    oauth_tokens.c.kind == "refresh",
                    oauth_tokens.c.used_at.is_not(None),
                )
            )
            used = conn.execute(
                update(oauth_tokens)
                .where(
                    oauth_tokens.c.token_hash == digest(refresh_token.token),
                    oauth_tokens.c.used_at.is_(None),
                )
                .values(used_at=utc_now())
            )
            if used.rowcount != 1:
                raise GrantRefused(TokenError("invalid_grant", "The refresh token has been used."))
            # The grant's earlier access tokens end with the refresh that replaces them.
            conn.execute(
                delete(oauth_tokens).where(
                    and_(
                        oauth_tokens.c.grant_id == refresh_token.grant_id,
                        oauth_tokens.c.kind == "access",
                    )
                )
            )
            return self._issue_tokens(
                conn,
                client.client_id,
                refresh_token.pat_hash,
                refresh_token.resource or self._resource(),
                refresh_token.grant_id,
            )

        return await self._writer.transaction(write)

    # --- access tokens -----------------------------------------------------------------

    async def load_access_token(self, token: str) -> AccessToken | None:
        """Unused: /mcp checks access tokens itself, with their personal token (airoi.auth)."""

        def read(conn: Connection) -> AccessToken | None:
            row = conn.execute(
                select(oauth_tokens).where(
                    oauth_tokens.c.token_hash == digest(token), oauth_tokens.c.kind == "access"
                )
            ).first()
            if row is None or epoch_of(row.expires_at) <= time.time():
                return None
            return AccessToken(
                token=token,
                client_id=row.client_id,
                scopes=row.scopes.split(),
                expires_at=epoch_of(row.expires_at),
                resource=row.resource,
            )

        return await self._writer.transaction(read)

    # --- revocation --------------------------------------------------------------------

    async def revoke(self, token: AccessToken | RefreshToken) -> None:
        grant_id = getattr(token, "grant_id", None)
        if grant_id is None:
            return
        await self._writer.transaction(
            lambda conn: conn.execute(
                delete(oauth_tokens).where(oauth_tokens.c.grant_id == grant_id)
            )
        )
