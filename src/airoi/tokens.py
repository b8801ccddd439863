"""Personal access tokens: issued as random secrets, stored only as a hash (SEMANTICS R29).

Nothing here reads a store: the light client (airoi.client) uses these too."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "airoi_"  # noqa: S105 - a visible marker, not a secret
# An OAuth access token's (airoi.oauth), told apart from a personal token's by it.
ACCESS_PREFIX = "airoi-at_"
PREFIX_LENGTH = 14  # "airoi_" and the first 8 characters of the secret: shown, never enough to use
# SPEC 5: an Owner or Admin issues tokens; a token is issued to (and acts as) that user.
ISSUING_ROLES = frozenset({"owner", "admin"})
# SEMANTICS R29: at least 32 bytes of entropy. new_token writes 32 random bytes in URL-safe
# base64, 43 characters of 6 bits each (258 bits); 42 such characters hold at most 252 bits.
# So a secret given from elsewhere (a bundle) needs at least 43 characters after the prefix.
# Length is necessary, not sufficient: no check can tell that the characters were random.
SECRET_MIN_LENGTH = 43


def new_token() -> str:
    """A new secret: 32 random bytes (256 bits of entropy), URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def secret_length(token: str) -> int:
    """Characters of the secret part: what follows the "airoi_" prefix, or the whole token."""
    return len(token.removeprefix(TOKEN_PREFIX))


def sendable(token: str) -> bool:
    """Whether a client can send `token` in an Authorization header as it is: printable
    ASCII, no space (the client and the loader both hold tokens to this)."""
    return all("!" <= char <= "~" for char in token)


def hash_token(secret: str) -> str:
    # The secret carries 256 bits of entropy, so one SHA-256 is enough: there is
    # nothing to brute-force, and lookup by hash keeps comparison constant-time.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def shown_prefix(secret: str) -> str:
    return secret[:PREFIX_LENGTH]
