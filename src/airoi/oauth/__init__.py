"""OAuth 2.1 for the tool endpoint (issue 23): assistants that only speak OAuth get tokens
that act as a personal access token pasted on a sign-in page (SPEC 5.2)."""

from airoi.oauth.routes import OAuthRoutes
from airoi.oauth.urls import base_url, challenge, resource_of

__all__ = ["OAuthRoutes", "base_url", "challenge", "resource_of"]
