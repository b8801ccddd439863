"""Authorization codes: the authorization request checked before the sign-in page, the code
that page issues (once a signed request), and a code loaded for its exchange.

A code lives CODE_SECONDS. The exchange (airoi.oauth.grants) keeps the hash of a code it took
in oauth_tokens (kind USED_CODE) with its grant until the code would have expired, so that a
replay of it ends that grant; a sign-in request a code was issued for is kept there as well
(kind USED_SIGN_IN) until the request expires, so that it issues one. Neither is ever taken
as a token.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from mcp.server.auth.provider import AuthorizationCode, AuthorizationParams, AuthorizeError
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl
from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from airoi.db.tables import oauth_clients, oauth_codes, oauth_tokens
from airoi.oauth.clients import SCOPE
from airoi.oauth.writer import OAuthWriter, digest, epoch_of, new_secret
from airoi.timeutil import utc_now

CODE_SECONDS = 300
MAX_STATE_LENGTH = 1_000
# Tells a code apart (from a refresh token, "airoi-rt_", and a personal token, "airoi_") in a
# log or a paste.
CODE_PREFIX = "airoi-ac_"
# oauth_tokens.kind of a code once exchanged (kept to tell a replay, never a token), and of
# a sign-in request a code was issued for (kept until it expires, so that it issues one).
USED_CODE = "code"
USED_SIGN_IN = "sign-in"


class RequestUsed(Exception):
    """A code was issued for this sign-in request already."""


class PendingCode(AuthorizationCode):
    pat_hash: str


class AuthorizationCodes:
    """The oauth_codes table, and the sign-in requests answered (oauth_tokens, USED_SIGN_IN).

    `resource` says, for the request being answered, the resource identifier of its /mcp.
    """

    def __init__(self, writer: OAuthWriter, resource: Callable[[], str]) -> None:
        self._writer = writer
        self._resource = resource

    def check_request(self, params: AuthorizationParams) -> None:
        """An authorization request the sign-in page is not shown for: AuthorizeError."""
        if len(params.state or "") > MAX_STATE_LENGTH:
            raise AuthorizeError("invalid_request", "The state is too long.")
        if not 43 <= len(params.code_challenge) <= 128:
            raise AuthorizeError("invalid_request", "The code_challenge is not an S256 challenge.")
        expected = self._resource()
        if params.resource is not None and params.resource.rstrip("/") != expected:
            # RFC 8707: a token is only issued for this server's /mcp.
            raise AuthorizeError("invalid_target", f"The resource must be {expected}.")

    def issue(
        self,
        client_id: str,
        redirect_uri: str,
        code_challenge: str,
        resource: str,
        pat_hash: str,
        request_hash: str,
        request_expires_at: datetime,
    ) -> str:
        """A code for a personal token the sign-in page found good (in a worker thread), once
        for the signed request whose hash is `request_hash`: RequestUsed when one was issued
        for it already (the row that says so lives until the request expires)."""
        code = new_secret(CODE_PREFIX)
        now = utc_now()
        try:
            with self._writer.engine.begin() as conn:
                conn.execute(delete(oauth_codes).where(oauth_codes.c.expires_at < now))
                conn.execute(
                    delete(oauth_tokens).where(
                        oauth_tokens.c.kind == USED_SIGN_IN, oauth_tokens.c.expires_at < now
                    )
                )
                used = conn.execute(
                    select(oauth_tokens.c.token_hash).where(
                        oauth_tokens.c.token_hash == request_hash
                    )
                ).first()
                if used is not None:
                    raise RequestUsed
                granted = conn.execute(
                    update(oauth_clients)
                    .where(oauth_clients.c.client_id == client_id)
                    .values(granted_at=func.coalesce(oauth_clients.c.granted_at, now))
                )
                if not granted.rowcount:
                    raise LookupError("the client is no longer registered")
                conn.execute(
                    insert(oauth_codes).values(
                        code_hash=digest(code),
                        client_id=client_id,
                        pat_hash=pat_hash,
                        redirect_uri=redirect_uri,
                        code_challenge=code_challenge,
                        resource=resource,
                        scopes=SCOPE,
                        expires_at=now + timedelta(seconds=CODE_SECONDS),
                    )
                )
                conn.execute(
                    insert(oauth_tokens).values(
                        token_hash=request_hash,
                        kind=USED_SIGN_IN,
                        grant_id=request_hash,
                        client_id=client_id,
                        pat_hash=pat_hash,
                        resource=resource,
                        scopes=SCOPE,
                        expires_at=request_expires_at,
                        used_at=now,
                    )
                )
        except IntegrityError:
            # Another POST of the same request wrote its row first.
            raise RequestUsed from None
        return code

    async def load(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> PendingCode | None:
        def read(conn: Connection) -> PendingCode | None:
            row = conn.execute(
                select(oauth_codes).where(
                    oauth_codes.c.code_hash == digest(authorization_code),
                    oauth_codes.c.client_id == client.client_id,
                )
            ).first()
            if row is None:
                used = conn.execute(
                    select(oauth_tokens.c.grant_id).where(
                        oauth_tokens.c.token_hash == digest(authorization_code),
                        oauth_tokens.c.kind == USED_CODE,
                        oauth_tokens.c.client_id == client.client_id,
                    )
                ).first()
                if used is not None:
                    # A code presented after it was exchanged: someone else holds a copy, so
                    # the tokens issued on its first use end (OAuth 2.1, 4.1.3).
                    conn.execute(
                        delete(oauth_tokens).where(oauth_tokens.c.grant_id == used.grant_id)
                    )
                return None
            return PendingCode(
                code=authorization_code,
                scopes=row.scopes.split(),
                expires_at=float(epoch_of(row.expires_at)),
                client_id=row.client_id,
                code_challenge=row.code_challenge,
                redirect_uri=AnyUrl(row.redirect_uri),
                redirect_uri_provided_explicitly=True,
                resource=row.resource,
                pat_hash=row.pat_hash,
            )

        return await self._writer.transaction(read)
