"""Who is asking: the bearer token of a request resolved to its Principal (SEMANTICS R29, R30).

One lookup for every token the service takes: a personal access token anywhere, and at /mcp
an OAuth access token, which acts as the personal token it was issued against (SPEC 5.2). It
is refused as soon as that token is revoked or expires or its user is removed or demoted, as
the token itself would be (R29), and when it was issued for another resource (RFC 8707: its
audience is this server's /mcp, as the request reached it). The HTTP API never takes one.

A token is looked up by its hash, so the secret itself is never compared or stored.
401 is decided before 403, and both before any parameter is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, bindparam, select, update

from airoi import token_cache
from airoi.db.prepared import Prepared
from airoi.db.tables import accounts, oauth_tokens, tokens, users
from airoi.errors import ApiError
from airoi.listing import MAX_ID
from airoi.timeutil import utc_now
from airoi.tokens import (
    ACCESS_PREFIX,
    ISSUING_ROLES,
    PREFIX_LENGTH,
    hash_token,
    new_token,
    shown_prefix,
)

if TYPE_CHECKING:
    from airoi.token_cache import TokenCache


@dataclass(frozen=True)
class Principal:
    """The account a request may read, and the user whose token it carries."""

    account_id: int
    user_id: int
    account_currency: str
    fiscal_year_start_month: int


REALM = 'Bearer realm="airoi"'
# Said when a token was sent and is refused (unknown, revoked, expired, its holder removed or
# no longer an Owner or Admin):
# RFC 6750 3.1's code, which tells a client to get another token, not to send this one again.
INVALID_TOKEN = 'error="invalid_token"'  # noqa: S105 - a challenge's parameter


def unauthorized(message: str, *, invalid_token: bool = False) -> ApiError:
    """A 401 with its challenge: no token (or no bearer one) sent, or `invalid_token`."""
    challenge = f"{REALM}, {INVALID_TOKEN}" if invalid_token else REALM
    return ApiError(401, message, headers={"WWW-Authenticate": challenge})


def authorization_of(scope: Mapping[str, Any]) -> str | None:
    """A request's (first) Authorization header, read from its ASGI scope as it came: the
    framework's own header view would be built for this one look."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bytes(value).decode("latin-1")
    return None


def bearer_secret(authorization: str | None) -> str:
    if not authorization:
        raise unauthorized("A bearer token is required: send Authorization: Bearer <token>.")
    scheme, _, secret = authorization.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        raise unauthorized("The Authorization header must be: Bearer <token>.")
    return secret


# Built and compiled once, run on the driver: every request runs it (see airoi.db.prepared).
_TOKEN_LOOKUP = Prepared(
    select(
        tokens.c.expires_at,
        tokens.c.revoked_at,
        users.c.id.label("user_id"),
        users.c.removed_at,
        users.c.role,
        accounts.c.id.label("account_id"),
        accounts.c.api_access,
        accounts.c.currency,
        accounts.c.fiscal_year_start_month,
    )
    .join(users, users.c.id == tokens.c.user_id)
    .join(accounts, accounts.c.id == users.c.account_id)
    .where(tokens.c.token_hash == bindparam("token_hash"))
)


REVOKED = "The token has been revoked."
EXPIRED = "The token has expired."
REMOVED = "The token's holder can no longer open the account."
DEMOTED = "The token's holder is no longer an Owner or Admin of the account."


# An OAuth access token's row: its own expiry and audience, then the personal token's row.
_ACCESS_LOOKUP = Prepared(
    select(
        oauth_tokens.c.expires_at.label("access_expires_at"),
        oauth_tokens.c.resource,
        *_TOKEN_LOOKUP.statement.selected_columns,
    )
    .join(tokens, tokens.c.token_hash == oauth_tokens.c.pat_hash)
    .join(users, users.c.id == tokens.c.user_id)
    .join(accounts, accounts.c.id == users.c.account_id)
    .where(
        oauth_tokens.c.token_hash == bindparam("token_hash"),
        oauth_tokens.c.kind == "access",
    )
)
# Only a personal token's holder is refused in its own words: an OAuth token's are its own.
_BEHIND = {
    REVOKED: "The personal access token behind this token has been revoked.",
    EXPIRED: "The personal access token behind this token has expired.",
}


def authenticate(
    conn: Connection,
    authorization: str | None,
    *,
    now: datetime | None = None,
    cache: TokenCache | None = None,
    oauth_resource: str | None = None,
    takes_oauth: bool = False,
) -> Principal:
    """The request's principal, decided from its token's row: read on `conn`, or kept by
    `cache` (airoi.token_cache) while the store has not changed. Either way the expiry is
    compared with now, and 401 or 403 decided, here on every request.

    With `takes_oauth` (/mcp), an OAuth access token is taken too, for the resource
    `oauth_resource` its request reached; it is never kept in the cache."""
    secret = bearer_secret(authorization)
    if takes_oauth and secret.startswith(ACCESS_PREFIX):
        row = _ACCESS_LOOKUP.first(conn, {"token_hash": hash_token(secret)})
        return _oauth_principal(row, oauth_resource, now or utc_now())
    asked = {"token_hash": hash_token(secret)}
    row = (
        _TOKEN_LOOKUP.first(conn, asked)
        if cache is None
        else cache.row(conn, asked["token_hash"], lambda c: _TOKEN_LOOKUP.first(c, asked))
    )
    return _principal(row, now)


def authenticate_kept(
    cache: TokenCache, authorization: str | None, *, now: datetime | None = None
) -> Principal | None:
    """The request's principal decided, as `authenticate` decides it, from the row `cache`
    keeps for its token where the cache can vouch for that row without the store
    (`TokenCache.kept`); None when the store must be asked."""
    row = cache.kept(hash_token(bearer_secret(authorization)))
    return None if row is None else _principal(row, now)


def _principal(row: Any, now: datetime | None) -> Principal:
    if row is None:
        raise unauthorized("The token is not valid.", invalid_token=True)
    (expires_at, revoked_at, user_id, removed_at, role, account_id, api_access, currency,
     fy_start) = row  # fmt: skip
    refusal = holder_refusal(revoked_at, expires_at, removed_at, role, now)
    if refusal is not None:
        raise unauthorized(refusal, invalid_token=True)
    return _granted(api_access, account_id, user_id, currency, fy_start)


def _oauth_principal(row: Any, resource: str | None, now: datetime) -> Principal:
    if row is None:
        raise unauthorized("The token is not valid.", invalid_token=True)
    (access_expires_at, issued_for, expires_at, revoked_at, user_id, removed_at, role,
     account_id, api_access, currency, fy_start) = row  # fmt: skip
    if access_expires_at <= now:
        raise unauthorized(EXPIRED, invalid_token=True)
    if resource is None or issued_for != resource:
        raise unauthorized("The token was issued for another resource.", invalid_token=True)
    refusal = holder_refusal(revoked_at, expires_at, removed_at, role, now)
    if refusal is not None:
        raise unauthorized(_BEHIND.get(refusal, refusal), invalid_token=True)
    return _granted(api_access, account_id, user_id, currency, fy_start)


def _granted(
    api_access: bool, account_id: int, user_id: int, currency: str, fy_start: int
) -> Principal:
    if not api_access:
        raise ApiError(403, "This account's plan does not include API access.")
    return Principal(
        account_id=account_id,
        user_id=user_id,
        account_currency=currency,
        fiscal_year_start_month=fy_start,
    )


def holder_refusal(
    revoked_at: datetime | None,
    expires_at: datetime | None,
    removed_at: datetime | None,
    role: str,
    now: datetime | None,
) -> str | None:
    """SEMANTICS R29: why a personal token no longer opens its account, in one sentence, or
    None when it does. Only an Owner or Admin, not removed, holds API access (SPEC 5.2)."""
    if revoked_at is not None:
        return REVOKED
    if expires_at is not None and expires_at <= (now or utc_now()):
        return EXPIRED
    if removed_at is not None:
        return REMOVED
    if role not in ISSUING_ROLES:
        return DEMOTED
    return None


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
