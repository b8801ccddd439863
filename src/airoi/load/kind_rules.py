"""Rules of one kind of record that look past the record: tokens (R29, SPEC 5), vendor
merges (SPEC 2.3), simulated connections (SPEC 2.9) and decisions (SPEC 3)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from airoi.db import tables
from airoi.load.batches import chunks
from airoi.load.gathering import GatheredBundle
from airoi.load.kinds import GIVEN_LENGTH, KINDS
from airoi.load.presence import MISSING, Presence
from airoi.load.records import Problems
from airoi.tokens import ISSUING_ROLES, SECRET_MIN_LENGTH, TOKEN_PREFIX


def check_tokens(conn: Connection, bundle: GatheredBundle, problems: Problems) -> None:
    _check_token_issuers(conn, bundle, problems)
    recs = [rec for rec in bundle.small["tokens"] if rec.row["token_hash"] is not None]
    by_hash = {rec.row["token_hash"]: rec for rec in recs}
    table = tables.tokens
    for batch in chunks(sorted(by_hash)):
        query = select(table.c.token_hash, table.c.user_id).where(table.c.token_hash.in_(batch))
        for token_hash, user_id in conn.execute(query):
            rec = by_hash[token_hash]
            if rec.row["user_id"] is not None and user_id != rec.row["user_id"]:
                problems.add(f"{rec.label}.token: this token is already issued to another user")


def _check_token_issuers(conn: Connection, bundle: GatheredBundle, problems: Problems) -> None:
    """A token that can authenticate: 32 bytes of secret (R29), an Owner's or Admin's (SPEC 5).

    A revoked token opens nothing, so it is taken as given: a bundle can revoke
    any stored token, whatever its secret or its user's role now.
    """
    live = []
    for rec in bundle.small["tokens"]:
        length = rec.row.pop(GIVEN_LENGTH)
        if rec.row["revoked_at"] is not None:
            continue
        live.append(rec)
        if length is not None and length < SECRET_MIN_LENGTH:
            problems.add(
                f"{rec.label}.token: too short to hold 32 bytes of entropy (SEMANTICS R29): "
                f"the secret after the {TOKEN_PREFIX!r} prefix (or the whole token, without "
                f"one) needs at least {SECRET_MIN_LENGTH} characters, as 32 random bytes "
                f"take in URL-safe base64; it has {length}"
            )
    roles = {rec.row["id"]: rec.row["role"] for rec in bundle.small["users"]}
    wanted = {
        rec.row["user_id"]
        for rec in live
        if rec.account is not None and rec.row["user_id"] not in roles
    }
    table = tables.users
    for batch in chunks(sorted(wanted)):
        query = select(table.c.id, table.c.role).where(table.c.id.in_(batch))
        for user_id, role in conn.execute(query):
            roles[user_id] = role
    for rec in live:
        user_id = rec.row["user_id"]
        role = roles.get(user_id) if rec.account is not None else None
        if role is not None and role not in ISSUING_ROLES:
            problems.add(
                f"{rec.label}.user_id: user {user_id} is a {role}; tokens are issued "
                "only to an Owner or Admin (SPEC 5)"
            )


def check_vendor_merges(
    conn: Connection, bundle: GatheredBundle, presence: Presence, problems: Problems
) -> None:
    recs = bundle.small["vendors"]
    if not any(rec.row["merged_into_id"] is not None for rec in recs):
        return
    merged: dict[int, int | None] = {}
    for rec in recs:
        if rec.row["id"] is not None:
            merged[rec.row["id"]] = rec.row["merged_into_id"]
    # Follow chains through the store too, to find cycles.
    table = tables.vendors
    frontier = {target for target in merged.values() if target is not None} - merged.keys()
    while frontier:
        found: dict[int, int | None] = {}
        for batch in chunks(sorted(frontier)):
            query = select(table.c.id, table.c.merged_into_id).where(table.c.id.in_(batch))
            found.update({row.id: row.merged_into_id for row in conn.execute(query)})
        for row_id in frontier:
            merged[row_id] = found.get(row_id)
        frontier = {t for t in found.values() if t is not None} - merged.keys()
    for rec in recs:
        start = rec.row["id"]
        target = rec.row["merged_into_id"]
        if start is None or target is None or rec.account is None:
            continue
        if target == start:
            problems.add(f"{rec.label}.merged_into_id: a vendor cannot be merged into itself")
            continue
        seen = {start}
        step: int | None = target
        while step is not None:
            if step in seen:
                problems.add(
                    f"{rec.label}.merged_into_id: merging into vendor {target} makes a cycle"
                )
                break
            seen.add(step)
            step = merged.get(step)
        found_account = presence.present["vendors"].get(target, MISSING)
        if found_account is MISSING or (found_account is not None and found_account != rec.account):
            problems.add(f"{rec.label}.merged_into_id: no vendor {target} in account {rec.account}")


def check_simulated_connections(
    conn: Connection, bundle: GatheredBundle, presence: Presence, problems: Problems
) -> None:
    for rec in bundle.small["integrations"]:
        if rec.row["simulated"] and rec.account is not None:
            info = presence.accounts.get(rec.account)
            if info is not None and not info.internal:
                problems.add(
                    f"{rec.label}.simulated: only an internal account can "
                    "hold a simulated connection"
                )
    # The same rule from the account's side: one loaded again as not internal must not
    # keep a stored simulated connection the bundle neither deletes nor gives again.
    given = {rec.row["id"] for rec in bundle.small["integrations"]}
    going = bundle.deletes.get("integrations", set())
    external = {
        rec.row["id"]: rec
        for rec in bundle.small["accounts"]
        if rec.row["id"] is not None and not rec.row["internal"]
    }
    table = tables.integrations
    for batch in chunks(sorted(external)):
        query = (
            select(table.c.account_id, table.c.id)
            .where(table.c.account_id.in_(batch), table.c.simulated.is_(True))
            .order_by(table.c.id)
        )
        for account_id, integration_id in conn.execute(query):
            if integration_id not in given and integration_id not in going:
                problems.add(
                    f"{external[account_id].label}.internal: false, but its connection "
                    f"{integration_id} is simulated, which only an internal account can "
                    "hold (SPEC 2.9)"
                )


def check_decisions(bundle: GatheredBundle, presence: Presence, problems: Problems) -> None:
    """SPEC 3: a decision never changes once written; its initiative must resolve.

    Its `updated_at` is the store's (SEMANTICS R32: a new name of its decider moves it),
    so a given one is not compared.
    """
    recs = [rec for rec in bundle.small["decisions"] if rec.row["id"] is not None]
    kind = KINDS["decisions"]
    stored_decisions = presence.stored["decisions"]
    for rec in recs:
        row = rec.row
        stored_row = stored_decisions.get(row["id"])
        initiative_id = row["initiative_id"]
        if stored_row is not None and stored_row["account_id"] == rec.account:
            unlinked = stored_row["initiative_id"] is None
            for column in (*kind.served, "created_at"):
                if column == "initiative_id" and (unlinked or stored_row[column] == initiative_id):
                    continue  # unlinked when its initiative was deleted: still the same
                if stored_row[column] != row[column]:
                    problems.add(f"{rec.label}.{column}: a decision never changes once written")
            if stored_row["initiative_id"] in (None, initiative_id):
                continue
        if initiative_id is not None and rec.account is not None:
            account = presence.initiative_account(initiative_id)
            if account is MISSING or (account is not None and account != rec.account):
                problems.add(
                    f"{rec.label}.initiative_id: no initiative "
                    f"{initiative_id} in account {rec.account}"
                )
