"""The SDK's provider protocol (OAuthAuthorizationServerProvider) over the OAuth state in the
store.

Everything a grant needs between two requests lives in the oauth_* tables (migration 0008),
so that any worker of a store can answer any step: registered clients (airoi.oauth.clients),
codes not yet exchanged (airoi.oauth.codes), access and refresh tokens (airoi.oauth.grants).
All of them write through one OAuth writer (airoi.oauth.writer), held to those tables.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from airoi.oauth.clients import RegisteredClients
from airoi.oauth.codes import AuthorizationCodes, PendingCode
from airoi.oauth.grants import Grants, HeldRefreshToken
from airoi.oauth.writer import OAuthWriter
from airoi.settings import Settings


class OAuthProvider:
    """The SDK's OAuthAuthorizationServerProvider over the store, for one app.

    `resource` says, for the request being answered, the resource identifier of its /mcp
    (RFC 8707): it depends on the Host the request came to unless AIROI_PUBLIC_URL fixes it.
    """

    def __init__(self, settings: Settings, resource: Callable[[], str]) -> None:
        self._writer = OAuthWriter(settings)
        self.clients = RegisteredClients(self._writer)
        self.codes = AuthorizationCodes(self._writer, resource)
        self.grants = Grants(self._writer, resource)
        # Made by airoi.oauth.routes: the URL of the sign-in page for a pending request.
        self.sign_in_url: Callable[
            [OAuthClientInformationFull, AuthorizationParams], Awaitable[str]
        ]

    def close(self) -> None:
        self._writer.close()

    # --- clients (RFC 7591) -----------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await self.clients.register(client_info)

    # --- authorization (the sign-in page makes the code) -------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.codes.check_request(params)
        return await self.sign_in_url(client, params)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> PendingCode | None:
        return await self.codes.load(client, authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: PendingCode
    ) -> OAuthToken:
        return await self.grants.exchange_code(client, authorization_code)

    # --- refresh (rotating) ------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> HeldRefreshToken | None:
        return await self.grants.load_refresh_token(client, refresh_token)

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: HeldRefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        # A grant carries the one scope (SCOPE) whatever the refresh asks for.
        return await self.grants.refresh(client, refresh_token)

    # --- the rest of the protocol ------------------------------------------------------

    async def load_access_token(self, token: str) -> AccessToken | None:
        return await self.grants.load_access_token(token)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "Only authorization_code and refresh_token.")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self.grants.revoke(token)
