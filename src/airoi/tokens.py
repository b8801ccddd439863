"""Personal access tokens: issued to an Owner or Admin as random secrets, stored only as a
hash, revoked by the whole token or its shown prefix (SEMANTICS R29)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, select, update

from airoi import token_cache
from airoi.db.tables import tokens, users
from airoi.listing import MAX_ID
from airoi.timeutil import utc_now

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


# A hundred years: the longest expiry a token is issued with (a date past 9999 none can hold).
MAX_EXPIRY_DAYS = 36_500


class TokenRefused(Exception):
    """The CLI cannot issue or revoke as asked; the message says why."""


@dataclass(frozen=True)
class IssuedToken:
    secret: str
    prefix: str
    expires_at: datetime | None


def issue_token(engine: Engine, user_id: int, *, expires_in_days: int | None = None) -> IssuedToken:
    """A new token for an Owner or Admin; the secret is returned once and stored as a hash."""
    if not 1 <= user_id <= MAX_ID:  # no user has it; a store's integer could not even hold it
        raise TokenRefused(f"--user must be a user's id, a whole number from 1 to {MAX_ID}.")
    with engine.begin() as conn:
        user = conn.execute(
            select(users.c.role, users.c.removed_at).where(users.c.id == user_id)
        ).first()
        if user is None:
            raise TokenRefused(f"users[id={user_id}]: no such user.")
        if user.removed_at is not None:
            raise TokenRefused(f"users[id={user_id}]: the user has been removed from the account.")
        if user.role not in ISSUING_ROLES:
            raise TokenRefused(
                f"users[id={user_id}].role: tokens are issued only to an Owner or Admin, "
                f"not to a {user.role}."
            )
        if expires_in_days is not None and not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
            raise TokenRefused(
                f"--expires-in must be a whole number of days from 1 to {MAX_EXPIRY_DAYS}."
            )
        now = utc_now()
        expires_at = now + timedelta(days=expires_in_days) if expires_in_days else None
        secret = new_token()
        conn.execute(
            tokens.insert().values(
                token_hash=hash_token(secret),
                prefix=shown_prefix(secret),
                user_id=user_id,
                expires_at=expires_at,
                revoked_at=None,
                created_at=now,
            )
        )
    return IssuedToken(secret=secret, prefix=shown_prefix(secret), expires_at=expires_at)


def revoke_token(engine: Engine, given: str) -> str:
    """Revoke one live token: the whole token given, or the one whose shown prefix matches.

    A whole token is found by its hash, so each of two tokens that share a shown prefix
    can be revoked. Messages show at most the shown prefix, never more of what was given
    (SEMANTICS R15). Once committed, this process's token caches forget the token at once.
    """
    revoked = _revoke(engine, given)
    token_cache.changed_here()  # as load_bundle does: after the commit, not on a refusal
    return revoked


def _revoke(engine: Engine, given: str) -> str:
    with engine.begin() as conn:
        if len(given) > PREFIX_LENGTH:
            whole = conn.execute(
                select(tokens.c.token_hash, tokens.c.prefix, tokens.c.revoked_at).where(
                    tokens.c.token_hash == hash_token(given)
                )
            ).first()
            if whole is not None:
                if whole.revoked_at is not None:
                    raise TokenRefused(f"The token {whole.prefix}… is already revoked.")
                conn.execute(
                    update(tokens)
                    .where(tokens.c.token_hash == whole.token_hash)
                    .values(revoked_at=utc_now())
                )
                return str(whole.prefix)
        shown = given.removesuffix("…").removesuffix("...")  # as printed, ellipsis and all
        if len(shown) > PREFIX_LENGTH:
            # Neither a whole token nor a shown prefix. Its first characters alone could
            # name another token, so nothing is revoked (and no more than those is echoed).
            raise TokenRefused(
                f"No token is the one given ({shown[:PREFIX_LENGTH]}…): give a whole token, "
                f"or the prefix shown for it ({PREFIX_LENGTH} characters at most)."
            )
        if len(shown) < 8:
            raise TokenRefused("Give at least 8 characters of the token's shown prefix.")
        # A shown prefix, or its start: all that is stored of a token besides its hash.
        matches = conn.execute(
            select(tokens.c.token_hash, tokens.c.prefix).where(
                tokens.c.prefix.startswith(shown, autoescape=True),
                tokens.c.revoked_at.is_(None),
            )
        ).all()
        if not matches:
            raise TokenRefused(f"No live token has the prefix {shown!r}.")
        if len(matches) > 1:
            raise TokenRefused(
                f"{len(matches)} live tokens share the prefix {shown!r}; "
                "give the whole token to revoke one of them."
            )
        conn.execute(
            update(tokens)
            .where(tokens.c.token_hash == matches[0].token_hash)
            .values(revoked_at=utc_now())
        )
    return str(matches[0].prefix)
