"""One field's value (airoi.load.values): dates and times, numbers, rates, texts and names
converted as the store keeps them, or refused naming the field without quoting what a
secret field holds."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine

from airoi.db import tables
from tests.load.bundles import LATER, base_bundle, loaded, one, record, refused, snapshot


def test_a_sample_size_below_none_is_refused(engine: Engine) -> None:
    # SPEC 2.6 sample_size: how many readings a value stands for; -1 was stored and served.
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "observations", 31)["sample_size"] = -1
    assert refused(engine, bundle) == [
        "observations[id=31].sample_size: -1 is out of range (0 to 2147483647)"
    ]
    record(bundle, "observations", 31)["sample_size"] = 0
    loaded(engine, bundle, now=LATER)
    assert one(engine, tables.observations, id=31)["sample_size"] == 0


def test_datetimes_are_stored_utc_truncated_to_the_millisecond(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "decisions", 9)["decided_at"] = "2026-02-20T10:00:00.123456789Z"
    record(bundle, "initiatives", 5)["went_live_at"] = "2026-02-01 09:30:00.9999-05:00"
    record(bundle, "value_entries", 21)["approved_at"] = "2026-02-03T04:05:06"
    loaded(engine, bundle, now=datetime(2026, 3, 1, 12, 0, 0, 456_789))
    assert one(engine, tables.decisions, id=9)["decided_at"] == datetime(
        2026, 2, 20, 10, 0, 0, 123_000
    )
    assert one(engine, tables.initiatives, id=5)["went_live_at"] == datetime(
        2026, 2, 1, 14, 30, 0, 999_000
    )
    assert one(engine, tables.value_entries, id=21)["approved_at"] == datetime(2026, 2, 3, 4, 5, 6)
    assert one(engine, tables.metrics, id=6)["created_at"] == datetime(
        2026, 3, 1, 12, 0, 0, 456_000
    )


@pytest.mark.parametrize("name", ["rates.json", "rates.json.gz"])
def test_an_fx_rate_given_as_a_json_number_is_refused(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    label = "fx_rates[account_id=1,currency=EUR,effective_from=2026-01-01].rate"
    text = json.dumps(base_bundle()).replace('"rate": "1.0850"', '"rate": 1.2345678901234567')
    assert '"rate": 1.2345678901234567' in text
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    assert refused(engine, path) == [
        f"{label}: 1.2345678901234567 is a JSON number; write the rate as a decimal string: "
        '"1.2345678901234567"'
    ]
    assert all(not table_rows for table_rows in snapshot(engine).values())
    # A parsed bundle is held to the same: a float, an int or a Decimal is not a string.
    for number, hint in ((1.085, "1.085"), (2, "2"), (Decimal("1E-7"), "0.0000001")):
        bundle = base_bundle()
        bundle["fx_rates"][0]["rate"] = number
        assert refused(engine, bundle) == [
            f'{label}: {number} is a JSON number; write the rate as a decimal string: "{hint}"'
        ]
    bundle = base_bundle()
    bundle["fx_rates"][0]["rate"] = True
    assert refused(engine, bundle) == [f"{label}: true is not a decimal string such as '1.0825'"]


def test_a_credential_given_as_text_is_never_echoed(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "integrations", 4)["credentials"] = "sk-live-do-not-print"
    assert refused(engine, bundle) == ["integrations[id=4].credentials: a string is not an object"]


NUL_REFUSED = "holds a NUL character (\\u0000), which text cannot hold"


def test_a_nul_character_is_refused_by_field(engine: Engine, tmp_path: Path) -> None:
    # The same on both stores: PostgreSQL refused it with a message naming no record, SQLite
    # kept it. The file holds it as the JSON escape \u0000.
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Support \u0000 bot"
    record(bundle, "integrations", 4)["metric_categories"] = ["ai_usage", "a\u0000b"]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert "\\u0000" in path.read_text()
    assert sorted(refused(engine, path)) == [
        f"initiatives[id=5].title: {NUL_REFUSED}",
        f"integrations[id=4].metric_categories: {NUL_REFUSED}",
    ]


def test_a_lone_surrogate_is_refused_by_field(engine: Engine, tmp_path: Path) -> None:
    # A bundle given as a mapping holds one as it is; a file's are marked on the way to the
    # parser (tests/load/test_texts.py), which would turn them into "?".
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Support \ud800 bot"
    assert refused(engine, bundle) == [
        "initiatives[id=5].title: holds a lone surrogate (a \\ud800 to \\udfff escape without "
        "its pair) or U+FFFF, which no text holds"
    ]
    # A pair of surrogate escapes in a file is one character, and is kept.
    record(bundle, "initiatives", 5)["title"] = "Support \U0001f600 bot"
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert "\\ud83d\\ude00" in path.read_text()
    loaded(engine, path)
    assert one(engine, tables.initiatives, id=5)["title"] == "Support \U0001f600 bot"


@pytest.mark.parametrize(
    ("number", "why"),
    [
        ("1e300000000", "holds an integer past 64 bits"),  # minutes of CPU, the lock held
        ("1e5000", "holds an integer past 64 bits"),  # a traceback (4,300 digits at most)
        ("1e400", "holds an integer past 64 bits"),  # kept as 401 digits
        ("9223372036854775808", "holds an integer past 64 bits"),
        ("7" * 5000, "holds an integer past 64 bits"),  # was kept cut to 100 digits
        ("1.5e400", "holds an integer past 64 bits"),  # a JSON number: 15 and 399 zeros
    ],
)
def test_a_number_in_a_setting_past_what_is_stored_is_refused(
    engine: Engine, tmp_path: Path, number: str, why: str
) -> None:
    bundle = base_bundle()
    text = json.dumps(bundle).replace('"sk-test"', '"sk-test", "k": ' + number)
    path = tmp_path / "bundle.json"
    path.write_text(text)
    assert refused(engine, path) == [f"integrations[id=4].credentials: {why}"]
    # What fits is kept as given.
    path.write_text(
        json.dumps(bundle).replace(
            '"sk-test"', '"sk-test", "k": 9223372036854775807, "f": 1.5, "z": 1e-300000000'
        )
    )
    loaded(engine, path)
    credentials = one(engine, tables.integrations, id=4)["credentials"]
    assert credentials["k"] == 2**63 - 1 and credentials["f"] == 1.5 and credentials["z"] == 0.0


def test_a_persons_name_holding_an_e_mail_address_is_refused_by_field(engine: Engine) -> None:
    # SEMANTICS R15: a person's name is served (owner, decided_by, set_by, connected_by), an
    # e-mail address never; SPEC 2.1: names only. The problem line does not repeat the text.
    why = (
        "holds an e-mail address, and a person's name is served where an e-mail address never "
        "is (give the name alone; the address goes in email)"
    )
    for name in (
        "ada.king@acme.example",
        "Ada King <ada@acme.co.uk>",
        "Ada (a_king@mail.acme.io)",
        # Each of these was taken: a quoted local part, a comment, an address literal, and
        # the full-width and small at signs (read as @ once normalized, NFKC).
        '"ada king"@acme.example',
        "ada(work)@acme.example",
        "ada@(work)acme.example",
        "ada@[192.0.2.1]",
        "ada\uff20acme.example",
        "Ada <ada\ufe6bacme.example>",
    ):
        bundle = base_bundle()
        record(bundle, "users", 1)["name"] = name
        problems = refused(engine, bundle)
        assert problems == [f"users[id=1].name: {why}"], name
        assert "acme" not in "\n".join(problems)
    # An @ that is no address is a name like any other, and so is the address given as email.
    for name in ("Ada @ Finance", "@ada", "Ada at acme.example", "R&D@night", "Ada\uff20 HQ"):
        bundle = base_bundle()
        record(bundle, "users", 1)["name"] = name
        record(bundle, "users", 1)["email"] = "ada@acme.example"
        loaded(engine, bundle)
        assert one(engine, tables.users, id=1)["name"] == name
