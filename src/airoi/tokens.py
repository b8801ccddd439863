"""Personal access tokens: issued as random secrets, stored only as a hash (SEMANTICS R29)."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "airoi_"  # noqa: S105 - a visible marker, not a secret
PREFIX_LENGTH = 14  # "airoi_" and the first 8 characters of the secret: shown, never enough to use


def new_token() -> str:
    """A new secret: 32 random bytes (256 bits of entropy), URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(secret: str) -> str:
    # The secret carries 256 bits of entropy, so one SHA-256 is enough: there is
    # nothing to brute-force, and lookup by hash keeps comparison constant-time.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def shown_prefix(secret: str) -> str:
    return secret[:PREFIX_LENGTH]
