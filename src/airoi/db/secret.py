"""The store's own secret, that cursors are signed with (SEMANTICS R13).

Migration 0005 makes it (32 random bytes) and `airoi init` makes it again should the row be
gone. It lives in the store, so every server of one store, a hot standby too, signs and reads
the same cursors. `AIROI_SECRET_KEY`, where set, is signed with together with it
(`signing_secret`). It is never served or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import Connection, Engine, insert, select

from airoi.db.migrate import StoreNotReady
from airoi.db.tables import store_secret

SECRET_BYTES = 32


class NoStoreSecret(StoreNotReady):
    """The store holds no secret to sign cursors with; `airoi init` makes one."""

    def __init__(self) -> None:
        super().__init__(
            "The store holds no secret to sign cursors with. Run `airoi init` against it "
            "(which makes one), or set AIROI_SECRET_KEY, then serve again."
        )


def read_store_secret(conn: Connection) -> bytes | None:
    secret = conn.execute(select(store_secret.c.secret).where(store_secret.c.id == 1)).scalar()
    return None if secret is None else bytes(secret)


def signing_secret(stored: bytes | None, given: bytes | None) -> bytes | None:
    """What a server of this store signs with: the store's own secret, or, with
    `AIROI_SECRET_KEY` given, one made of the key and the store's secret. Changing the key
    refuses what was signed before, and two stores given the same key still refuse each
    other's cursors (a copy pulled from one is not taken for the other's). None when the
    store holds no secret and none is given."""
    if given is None:
        return stored
    return hmac.new(given, b"airoi store|" + (stored or b""), hashlib.sha256).digest()


def require_store_secret(engine: Engine) -> None:
    """Refuse to serve a store with no secret (its row removed by hand)."""
    with engine.connect() as conn:
        if read_store_secret(conn) is None:
            raise NoStoreSecret


def ensure_store_secret(engine: Engine) -> None:
    """Make the store's secret unless it has one; one already there is kept, so cursors
    issued before stay good."""
    with engine.begin() as conn:
        if read_store_secret(conn) is None:
            conn.execute(
                insert(store_secret).values(id=1, secret=secrets.token_bytes(SECRET_BYTES))
            )
