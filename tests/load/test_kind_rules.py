"""The rules of single kinds (airoi.load.kind_rules): tokens (SEMANTICS R29, SPEC 5),
simulated connections (SPEC 2.9) and decisions (SPEC 3)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from airoi.db import tables
from airoi.tokens import SECRET_MIN_LENGTH, hash_token, new_token, secret_length, shown_prefix
from tests.load.bundles import (
    LATER,
    NOW,
    SECRET,
    base_bundle,
    loaded,
    one,
    record,
    refused,
    snapshot,
)


def test_an_account_holding_a_simulated_connection_stays_internal(engine: Engine) -> None:
    # SPEC 2.9: only an internal account holds a simulated connection. The rule was checked
    # when the connection was loaded, not when its account was loaded again without it.
    bundle = base_bundle()
    bundle["integrations"].append(
        {
            "id": 14,
            "account_id": 2,
            "platform": "openai",
            "status": "active",
            "auth_type": "api_key",
            "simulated": True,
        }
    )
    loaded(engine, bundle)
    globex = {**base_bundle()["accounts"][1], "internal": False}
    assert refused(engine, {"accounts": [globex]}) == [
        "accounts[id=2].internal: false, but its connection 14 is simulated, which only an "
        "internal account can hold (SPEC 2.9)"
    ]
    # Without the simulated connection (deleted, or given again as real) it may change.
    real = {**bundle["integrations"][1], "simulated": False}
    assert loaded(engine, {"accounts": [globex], "integrations": [real]}).updated["accounts"] == 1
    loaded(
        engine,
        {"accounts": [base_bundle()["accounts"][1]], "integrations": [bundle["integrations"][1]]},
    )
    report = loaded(engine, {"accounts": [globex], "delete": {"integrations": [14]}})
    assert (report.updated["accounts"], report.deleted["integrations"]) == (1, 1)


def test_a_token_issued_to_another_user_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(engine, {"tokens": [{"user_id": 2, "token": SECRET}]})
    assert problems == ["tokens[#0,user_id=2].token: this token is already issued to another user"]


def test_a_decision_never_changes_once_written(engine: Engine) -> None:
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "decisions", 9).update(rationale="Deflection tripled.", roi=1.5)
    problems = refused(engine, bundle)
    assert sorted(problems) == [
        "decisions[id=9].rationale: a decision never changes once written",
        "decisions[id=9].roi: a decision never changes once written",
    ]
    report = loaded(engine, now=LATER)
    assert report.unchanged["decisions"] == 1
    assert one(engine, tables.decisions, id=9)["updated_at"] == NOW


def test_tokens_are_stored_hashed_never_in_clear(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["tokens"][0].update(expires_at="2026-06-01T00:00:00Z")
    loaded(engine, bundle)
    token = one(engine, tables.tokens, user_id=1)
    assert token["token_hash"] == hash_token(SECRET)
    assert token["prefix"] == shown_prefix(SECRET)
    assert token["expires_at"] == datetime(2026, 6, 1)
    assert token["created_at"] == NOW
    for table_rows in snapshot(engine).values():
        for row in table_rows:
            assert not any(isinstance(v, str) and SECRET in v for v in row)
    # Revoking through a later bundle updates the same token.
    bundle["tokens"][0]["revoked_at"] = "2026-03-02T00:00:00Z"
    assert loaded(engine, bundle, now=LATER).updated["tokens"] == 1
    assert one(engine, tables.tokens, user_id=1)["revoked_at"] == datetime(2026, 3, 2)


def _too_short(length: int, pos: int = 0) -> str:
    return (
        f"tokens[#{pos},user_id=1].token: too short to hold 32 bytes of entropy (SEMANTICS R29): "
        "the secret after the 'airoi_' prefix (or the whole token, without one) needs at least "
        f"43 characters, as 32 random bytes take in URL-safe base64; it has {length}"
    )


def test_a_token_too_short_for_32_bytes_of_entropy_is_refused(engine: Engine) -> None:
    loaded(engine)
    short = "airoi_" + "k" * 42
    problems = refused(
        engine, {"tokens": [{"user_id": 1, "token": "short"}, {"user_id": 1, "token": short}]}
    )
    # Two tokens of one user: each line says which (its place in the bundle's list).
    assert problems == [_too_short(5), _too_short(42, pos=1)]
    # 43 characters after the prefix (or without one) is what `airoi token issue` writes.
    assert secret_length(new_token()) == SECRET_MIN_LENGTH == 43
    enough = [{"user_id": 1, "token": short + "k"}, {"user_id": 1, "token": "k" * 43}]
    assert loaded(engine, {"tokens": enough}).inserted["tokens"] == 2
    # A revoked token opens nothing: a bundle may record (or revoke) one, however short.
    gone = {"user_id": 1, "token": "short", "revoked_at": "2026-03-01T00:00:00Z"}
    assert loaded(engine, {"tokens": [gone]}).inserted["tokens"] == 1


def test_a_token_for_a_user_who_is_not_owner_or_admin_is_refused(engine: Engine) -> None:
    loaded(engine)
    member = {"id": 3, "account_id": 1, "name": "Max", "role": "member"}
    token = {"user_id": 3, "token": SECRET + "-max"}
    problems = refused(engine, {"users": [member], "tokens": [token]})
    assert problems == [
        "tokens[#0,user_id=3].user_id: user 3 is a member; tokens are issued only to an Owner or "
        "Admin (SPEC 5)"
    ]
    # A stored user's role counts; a role given in the same bundle counts over the stored one.
    loaded(engine, {"users": [member]})
    assert refused(engine, {"tokens": [token]}) == problems
    viewer = {**record(base_bundle(), "users", 1), "role": "viewer"}
    assert refused(engine, {"users": [viewer], "tokens": base_bundle()["tokens"]}) == [
        "tokens[#0,user_id=1].user_id: user 1 is a viewer; tokens are issued only to an Owner or "
        "Admin (SPEC 5)"
    ]
    promoted = {**member, "role": "admin"}
    assert loaded(engine, {"users": [promoted], "tokens": [token]}).inserted["tokens"] == 1
    # A revoked token opens nothing: a bundle can revoke the token of a user who lost the role.
    revoked = {**token, "revoked_at": "2026-03-01T00:00:00Z"}
    report = loaded(engine, {"users": [member], "tokens": [revoked]}, now=LATER)
    assert (report.updated["users"], report.updated["tokens"]) == (1, 1)
