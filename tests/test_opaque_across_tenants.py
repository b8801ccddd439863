"""Nothing an account receives moves because another account did something (issue 46): its
cursors are encrypted and authenticated (the store-wide sequence of tombstones, the positions
of rows, are not readable in them), and the ids the store makes for it (vendors made from a
name, rows matched by source ref) are drawn at random, not from a sequence all accounts share.
Cursors issued before, signed but readable, are still taken."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from datetime import datetime, timedelta
from typing import Any

from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, select

from airoi.db.secret import read_store_secret
from airoi.db.tables import vendors
from airoi.load import load_bundle
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]


def _tenants(engine: Engine) -> dict[str, Any]:
    b = BundleBuilder()
    found: dict[str, Any] = {}
    for name in ("Alpha", "Beta"):
        account = b.account(name=name)
        found[name] = {"account": account, "token": b.token(b.user(account, role="owner"))}
        initiative = b.initiative(account)
        found[name]["initiative"] = initiative
        found[name]["entries"] = [b.cost_entry(initiative) for _ in range(4)]
    b.load(engine)
    return found


def _deletions(client: Client, token: str, **params: Any) -> Any:
    answer = client.get("/api/v1/deletions", params=params, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _raw(cursor: str) -> bytes:
    return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))


def test_a_cursor_reads_as_nothing_and_holds_still_while_another_account_works(
    client: Client, engine: Engine
) -> None:
    tenants = _tenants(engine)
    alpha, beta = tenants["Alpha"], tenants["Beta"]
    load_bundle(engine, {"delete": {"cost_entries": alpha["entries"][:2]}})
    first = _deletions(client, alpha["token"], limit=1)
    cursor = first["page"]["next_cursor"]
    raw = _raw(cursor)
    # Before, the cursor was its payload in plain text (list|account|position|sequence), then a
    # keyed hash: now no part of that payload reads in it.
    assert b"deletions" not in raw
    assert re.search(rb"[a-z_]{3,}\|[0-9]+\|", raw) is None
    # Beta deletes and reloads rows, moving the store-wide sequence; Alpha's answers stay.
    for _ in range(3):
        load_bundle(engine, {"delete": {"cost_entries": beta["entries"]}})
        load_bundle(engine, {"cost_entries": [
            {"id": entry, "initiative_id": beta["initiative"], "amount_cents": 1}
            for entry in beta["entries"]
        ]})  # fmt: skip
    again = _deletions(client, alpha["token"], limit=1)
    assert again == first
    rest = _deletions(client, alpha["token"], limit=1, cursor=cursor)
    assert [row["id"] for row in rest["data"]] == [alpha["entries"][1]]
    assert (
        rest["page"]["resume_cursor"]
        == _deletions(client, alpha["token"], limit=1, cursor=cursor)["page"]["resume_cursor"]
    )


def test_a_cursor_signed_before_encryption_is_still_taken(client: Client, engine: Engine) -> None:
    tenants = _tenants(engine)
    alpha = tenants["Alpha"]
    page = client.get(
        "/api/v1/cost_entries", params={"limit": 2}, headers=bearer(alpha["token"])
    ).json()
    last = page["data"][-1]
    with engine.connect() as conn:
        secret = read_store_secret(conn)
    assert secret is not None
    # The form of the cursors issued before: the payload as text, then its keyed hash.
    key = hmac.new(secret, b"airoi cursor v2", hashlib.sha256).digest()
    stamp = datetime.fromisoformat(last["updated_at"].removesuffix("Z"))
    micros = (stamp - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    payload = f"cost_entries|{alpha['account']}|{micros}|{last['id']}".encode()
    tag = hashlib.blake2b(payload, key=key, digest_size=16).digest()
    old = base64.urlsafe_b64encode(payload + tag).decode().rstrip("=")
    assert old != page["page"]["next_cursor"]
    by_old = client.get(
        "/api/v1/cost_entries", params={"limit": 2, "cursor": old}, headers=bearer(alpha["token"])
    ).json()
    by_new = client.get(
        "/api/v1/cost_entries",
        params={"limit": 2, "cursor": page["page"]["next_cursor"]},
        headers=bearer(alpha["token"]),
    ).json()
    assert by_old["data"] == by_new["data"] and by_new["data"]
    forged = base64.urlsafe_b64encode(payload + bytes(16)).decode().rstrip("=")
    refused = client.get(
        "/api/v1/cost_entries", params={"cursor": forged}, headers=bearer(alpha["token"])
    )
    assert refused.status_code == 400


def test_store_made_ids_follow_no_shared_sequence(engine: Engine) -> None:
    tenants = _tenants(engine)
    alpha, beta = tenants["Alpha"], tenants["Beta"]

    def vendor_made(tenant: dict[str, Any], name: str) -> int:
        load_bundle(engine, {"cost_entries": [
            {"id": tenant["entries"][0], "vendor_name": name, "initiative_id": tenant["initiative"]}
        ]})  # fmt: skip
        with engine.connect() as conn:
            return int(
                conn.execute(select(vendors.c.id).where(vendors.c.name == name)).scalar_one()
            )

    first = vendor_made(alpha, "Alpha's first vendor")
    between = [vendor_made(beta, f"Beta vendor {n}") for n in range(3)]
    second = vendor_made(alpha, "Alpha's second vendor")
    made = [first, *between, second]
    assert all(10**15 <= made_id < 2**53 for made_id in made)
    # From a shared sequence Alpha's second id would be its first plus four.
    assert abs(second - first) > 1_000
