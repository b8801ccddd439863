"""Registered clients (RFC 7591): registration, its bounds, and a client as the SDK sees it.

Bounds: at most MAX_CLIENTS registered clients. One never granted a code is removed after
UNGRANTED_CLIENT_SECONDS (an hour: a person signs in minutes after their assistant
registers), and at the bound a registration removes the oldest never granted to make room,
so that a flood of registrations (each address is also rate limited, airoi.oauth.routes)
cannot lock out a new assistant: it is refused only when every client holds a grant.
"""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import urlsplit

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl
from sqlalchemy import Connection, and_, delete, func, insert, select

from airoi.db.tables import oauth_clients, oauth_codes
from airoi.oauth.writer import GrantRefused, OAuthWriter, digest
from airoi.timeutil import utc_now

MAX_CLIENTS = 10_000
UNGRANTED_CLIENT_SECONDS = 3_600
MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 2_000
SCOPE = "mcp"  # the one scope granted: the tools of SPEC 4.B, read-only
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


class RegisteredClient(OAuthClientInformationFull):
    """A client as the SDK's handlers see it: `client_secret` holds the secret's hash (the
    token endpoint's authenticator compares hashes, airoi.oauth.routes), every request is
    granted the one scope, and the redirect URI must be given and registered exactly."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        return [SCOPE]

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            raise InvalidRedirectUriError("redirect_uri is required.")
        if str(redirect_uri) not in {str(uri) for uri in self.redirect_uris or ()}:
            raise InvalidRedirectUriError("redirect_uri is not one registered for this client.")
        return redirect_uri


def redirect_uri_refusal(uri: str) -> str | None:
    """Why a redirect URI cannot be registered (https, or http on a loopback host), or None."""
    if len(uri) > MAX_URI_LENGTH:
        return f"A redirect URI is longer than {MAX_URI_LENGTH} characters."
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        return "A redirect URI must not have a fragment."
    if "@" in parts.netloc:  # https://localhost@evil.example/ goes to evil.example
        return "A redirect URI must not hold a user name or password before its host."
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and (host in LOOPBACK_HOSTS or f"[{host}]" in LOOPBACK_HOSTS):
        return None
    return "A redirect URI must be https, or http on a loopback host (127.0.0.1, localhost, [::1])."


class RegisteredClients:
    """The oauth_clients table: a client looked up, a client registered."""

    def __init__(self, writer: OAuthWriter) -> None:
        self._writer = writer

    async def get(self, client_id: str) -> OAuthClientInformationFull | None:
        if not 1 <= len(client_id) <= 64:
            return None

        def read(conn: Connection) -> OAuthClientInformationFull | None:
            row = conn.execute(
                select(oauth_clients.c.secret_hash, oauth_clients.c.registration).where(
                    oauth_clients.c.client_id == client_id
                )
            ).first()
            if row is None:
                return None
            return RegisteredClient.model_validate(
                {
                    **json.loads(row.registration),
                    "client_id": client_id,
                    "client_secret": row.secret_hash,
                }
            )

        return await self._writer.transaction(read)

    async def register(self, client_info: OAuthClientInformationFull) -> None:
        uris = [str(uri) for uri in client_info.redirect_uris or ()]
        if not uris or len(uris) > MAX_REDIRECT_URIS:
            raise RegistrationError(
                "invalid_redirect_uri", f"Give from 1 to {MAX_REDIRECT_URIS} redirect URIs."
            )
        for uri in uris:
            refusal = redirect_uri_refusal(uri)
            if refusal is not None:
                raise RegistrationError("invalid_redirect_uri", refusal)
        # The one scope granted is the one registered, and the one the answer echoes (RFC
        # 7591 3.2.1: a requested value may be replaced): a client that asked for another is
        # not told it has it.
        client_info.scope = SCOPE
        registration = client_info.model_dump(
            mode="json",
            exclude_none=True,
            exclude={"client_id", "client_secret"},
        )
        secret = client_info.client_secret
        now = utc_now()

        def write(conn: Connection) -> None:
            never_granted = and_(
                oauth_clients.c.granted_at.is_(None),
                ~select(oauth_codes.c.code_hash)
                .where(oauth_codes.c.client_id == oauth_clients.c.client_id)
                .exists(),
            )
            conn.execute(
                delete(oauth_clients).where(
                    never_granted,
                    oauth_clients.c.created_at < now - timedelta(seconds=UNGRANTED_CLIENT_SECONDS),
                )
            )
            count = conn.execute(select(func.count()).select_from(oauth_clients)).scalar_one()
            if count >= MAX_CLIENTS:
                # Room made from the oldest clients never granted a code (a flood's).
                oldest = (
                    select(oauth_clients.c.client_id)
                    .where(never_granted)
                    .order_by(oauth_clients.c.created_at, oauth_clients.c.client_id)
                    .limit(count - MAX_CLIENTS + 1)
                )
                ids = [row[0] for row in conn.execute(oldest)]
                if ids:
                    count -= conn.execute(
                        delete(oauth_clients).where(oauth_clients.c.client_id.in_(ids))
                    ).rowcount
            if count >= MAX_CLIENTS:
                raise GrantRefused(
                    RegistrationError(
                        "invalid_client_metadata",
                        "This server holds as many registered clients as it takes; try later.",
                    )
                )
            conn.execute(
                insert(oauth_clients).values(
                    client_id=client_info.client_id,
                    secret_hash=digest(secret) if secret else None,
                    registration=json.dumps(registration, separators=(",", ":")),
                    created_at=now,
                    granted_at=None,
                )
            )

        await self._writer.transaction(write)
