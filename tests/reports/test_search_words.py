"""search matches words (issue 23): every word (AND), accents and case folded, ranked, names
and platforms found despite a typing mistake, vendors by their other names; through the
store's index, kept in step by loads and by migration 0007. On SQLite and PostgreSQL.

These call the tool's function on a connection, as the tool endpoint does (its transport is
tested in test_search.py); expectations are written out by hand."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, inspect, select

from airoi.auth import Principal
from airoi.catalog import Pages
from airoi.db import tables
from airoi.db.migrate import alembic_config, upgrade
from airoi.reports.search import MAX_RESULTS, distance, search
from tests.conftest import _empty
from tests.factories import BundleBuilder

PAGES = Pages("https://roi.example.com")


def principal_of(account_id: int) -> Principal:
    return Principal(
        account_id=account_id, user_id=0, account_currency="USD", fiscal_year_start_month=1
    )


def hits(engine: Engine, account_id: int, query: str, *kinds: str) -> list[dict[str, Any]]:
    with engine.connect() as db:
        result = search(
            db, principal_of(account_id), query=query, kinds=list(kinds) or None, pages=PAGES
        )
    assert len(result.results) <= MAX_RESULTS
    return [
        {"kind": hit.kind, "id": hit.id, "title": hit.title, "snippet": hit.snippet}
        for hit in result.results
    ]


def titles(engine: Engine, account_id: int, query: str, *kinds: str) -> list[str]:
    return [hit["title"] for hit in hits(engine, account_id, query, *kinds)]


@pytest.fixture
def words_world(engine: Engine) -> int:
    b = BundleBuilder()
    acct = b.account()
    other = b.account(name="Other")
    b.user(acct, name="Tomás Núñez", email="t@example.com")
    b.user(acct, name="Grace Hopper", email="g@example.com")
    b.user(other, name="Tomas Other", email="o@example.com")
    b.initiative(acct, title="Support ticket triage", description="Routes tickets by topic.")
    b.initiative(acct, title="Ticket triage")
    b.initiative(acct, title="Support chatbot")
    b.initiative(acct, title="Invoice capture", description="Matches purchase orders.")
    b.initiative(acct, title="Café rollout")
    b.initiative(acct, title="Straße pilot")
    b.initiative(acct, title="AI triage")
    b.initiative(acct, title="Triage (ai)")
    b.initiative(acct, title="Zendesk macros")
    b.initiative(other, title="Support ticket triage for others")
    spend = b.initiative(acct, title="Vendor spend")
    b.cost_entry(spend, vendor_name="Société Générale")
    b.cost_entry(spend, vendor_name="Zendesk")
    b.integration(acct, platform="openai", name="OpenAI production")
    b.load(engine)
    return acct


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("support triage", {"Support ticket triage"}),  # the example
        ("triage support", {"Support ticket triage"}),  # in any order
        ("ticket triage", {"Support ticket triage", "Ticket triage"}),
        ("support", {"Support ticket triage", "Support chatbot"}),
        ("support invoice", set()),  # no initiative holds both
        ("capture orders", {"Invoice capture"}),  # a word found in the description
        ("topic support", {"Support ticket triage"}),
        ("ai triage", {"AI triage", "Triage (ai)"}),  # a short word narrows the indexed one
        ("ai", {"AI triage", "Triage (ai)"}),  # short words only
        ("rollout café", {"Café rollout"}),
    ],
)
def test_every_word_must_match(
    engine: Engine, words_world: int, query: str, expected: set[str]
) -> None:
    assert set(titles(engine, words_world, query, "initiative")) == expected


@pytest.mark.parametrize(
    ("query", "kind", "expected"),
    [
        ("tomas", "person", "Tomás Núñez"),  # the example
        ("TOMAS NUNEZ", "person", "Tomás Núñez"),
        ("tomás núñez", "person", "Tomás Núñez"),
        ("nunez", "person", "Tomás Núñez"),
        ("cafe", "initiative", "Café rollout"),
        ("CAFÉ", "initiative", "Café rollout"),
        ("strasse", "initiative", "Straße pilot"),  # ß folds to ss
        ("societe generale", "vendor", "Société Générale"),
    ],
)
def test_accents_and_case_are_folded(
    engine: Engine, words_world: int, query: str, kind: str, expected: str
) -> None:
    assert titles(engine, words_world, query, kind) == [expected]


def test_another_accounts_records_are_never_found(engine: Engine, words_world: int) -> None:
    # SEMANTICS R27: "Tomas Other" and the other account's initiative stay out.
    assert titles(engine, words_world, "tomas", "person") == ["Tomás Núñez"]
    assert "Support ticket triage for others" not in titles(engine, words_world, "triage")


@pytest.mark.parametrize(
    ("query", "kind", "expected"),
    [
        ("zendsk", "vendor", "Zendesk"),  # the example: one letter left out
        ("zendsk", "platform", "Zendesk"),  # not connected: offered as a platform
        ("zednesk", "vendor", "Zendesk"),  # two letters swapped
        ("grce hopper", "person", "Grace Hopper"),
        ("hoper", "person", "Grace Hopper"),
        ("tomaz", "person", "Tomás Núñez"),
        ("gace", "person", "Grace Hopper"),  # 4 characters: one edit allowed
        ("openia", "connection", "OpenAI production"),
        ("antrhopic", "platform", "Anthropic"),
        ("socitee generale", "vendor", "Société Générale"),
        ("salesforse", "platform", "Salesforce"),
    ],
)
def test_names_and_platforms_are_found_despite_a_typing_mistake(
    engine: Engine, words_world: int, query: str, kind: str, expected: str
) -> None:
    assert titles(engine, words_world, query, kind) == [expected]


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("zndsk", ("vendor", "platform")),  # two edits in a word of 5: one allowed
        ("grce zebra", ("person",)),  # every word must still match, typed or near
        ("zendsk", ("initiative",)),  # titles of initiatives need the words as they are
        ("opn", ("connection",)),  # words under 4 characters allow no mistake
    ],
)
def test_what_a_typing_mistake_does_not_find(
    engine: Engine, words_world: int, query: str, kinds: tuple[str, ...]
) -> None:
    assert titles(engine, words_world, query, *kinds) == []


def test_a_typing_mistake_ranks_after_every_hit_as_typed(engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    b.initiative(acct, title="Ticket routing", description="Support triage by hand.")
    b.initiative(acct, title="Triage for support")
    b.initiative(acct, title="Weekly support triage")
    b.initiative(acct, title="Support triage bot")
    b.initiative(acct, title="Support Triage")
    spend = b.initiative(acct, title="Spend")
    b.cost_entry(spend, vendor_name="Suport Triage Ltd")
    b.user(acct, name="Support Triage Desk", email=None)
    b.load(engine)
    assert titles(engine, acct, "support triage", "initiative", "vendor", "person") == [
        "Support Triage",  # the title is the query (case folded)
        "Support triage bot",  # the title starts with it
        "Support Triage Desk",  # the same rank: initiatives, then people (ALL_KINDS)
        "Weekly support triage",  # the title holds it
        "Triage for support",  # the title holds every word
        "Ticket routing",  # words found in the description only
        "Suport Triage Ltd",  # a typing mistake (in the name, not the query)
    ]


def test_exact_then_prefix_with_accents(engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    b.initiative(acct, title="Éclair review board")
    b.initiative(acct, title="Best eclair")
    b.initiative(acct, title="ÉCLAIR")
    b.load(engine)
    assert titles(engine, acct, "eclair", "initiative") == [
        "ÉCLAIR",
        "Éclair review board",
        "Best eclair",
    ]


def test_vendors_are_found_by_merged_names_and_the_names_entries_carry(engine: Engine) -> None:
    # SPEC 2.3: merging repoints entries and leaves their names; both names find the vendor
    # the entries now belong to, and a merged vendor is not a hit of its own.
    b = BundleBuilder()
    acct = b.account()
    spend = b.initiative(acct, title="Cloud")
    b._add("vendors", {"id": 500, "account_id": acct, "name": "Amazon Web Services"})
    b._add("vendors", {"id": 501, "account_id": acct, "name": "AWS", "merged_into_id": 500})
    b._add("vendors", {"id": 502, "account_id": acct, "name": "AWS EMEA", "merged_into_id": 501})
    b.cost_entry(spend, vendor_id=500, vendor_name="Amazon.com Inc")
    b.load(engine)
    for query in ("aws", "aws emea", "amazon.com", "amazon web"):
        found = hits(engine, acct, query, "vendor")
        assert [(h["id"], h["title"]) for h in found] == [(500, "Amazon Web Services")], query
    assert hits(engine, acct, "aws", "vendor")[0]["snippet"] == (
        "Vendor on 1 cost entry, found by another name it goes by"
    )
    assert hits(engine, acct, "amazon web", "vendor")[0]["snippet"] == "Vendor on 1 cost entry"


def test_loads_keep_the_index_in_step(engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    initiative = b.initiative(acct, title="Old title")
    kept = b.initiative(acct, title="Kept as is")
    person = b.user(acct, name="Ada Lovelace", email=None)
    b._add("vendors", {"id": 600, "account_id": acct, "name": "Beta Corp"})
    b._add("vendors", {"id": 601, "account_id": acct, "name": "Gamma Corp"})
    b.load(engine)
    assert titles(engine, acct, "old title", "initiative") == ["Old title"]
    entry_ids = entry_ids_of(engine, "initiative")
    later = BundleBuilder(first_id=1000)
    later._add("initiatives", {"id": initiative, "title": "New name"})
    later._add("users", {"id": person, "removed_at": "2026-01-01T00:00:00Z"})
    later._add("vendors", {"id": 601, "merged_into_id": 600})
    later.load(engine)
    assert titles(engine, acct, "old title", "initiative") == []
    assert titles(engine, acct, "new name", "initiative") == ["New name"]
    assert titles(engine, acct, "lovelace", "person") == []
    assert [h["id"] for h in hits(engine, acct, "gamma", "vendor")] == [600]
    # Only what changed was written again: the untouched initiative keeps its entry.
    after = entry_ids_of(engine, "initiative")
    assert after[kept] == entry_ids[kept]


def entry_ids_of(engine: Engine, kind: str) -> dict[int, int]:
    e = tables.search_entries
    with engine.connect() as conn:
        query = select(e.c.ref_id, e.c.id).where(e.c.kind == kind)
        return {ref_id: entry_id for ref_id, entry_id in conn.execute(query)}  # noqa: C416


def test_revision_0007_fills_the_index_and_its_downgrade_drops_it(engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    b.initiative(acct, title="Migrated triage")
    b.load(engine)
    config = alembic_config(engine)
    try:
        command.downgrade(config, "0006")
        with engine.connect() as conn:
            names = inspect(conn).get_table_names()
        assert [name for name in names if name.startswith("search_")] == []
    finally:
        upgrade(engine)
    with engine.connect() as conn:
        kinds = conn.execute(select(tables.search_entries.c.kind)).scalars().all()
    assert kinds == ["initiative"]
    assert titles(engine, acct, "triage migrated", "initiative") == ["Migrated triage"]


def test_the_edit_distance() -> None:
    assert distance("zendsk", "zendesk", 2) == 1
    assert distance("zednesk", "zendesk", 2) == 1  # a swap is one edit
    assert distance("kitten", "sitting", 5) == 3
    assert distance("abc", "abc", 0) == 0
    assert distance("abcdef", "uvwxyz", 2) == 3  # more than the bound: bound + 1


# Properties: random titles and descriptions of a few accented words; the hits are those
# holding every folded word, in the order of the ranks, worked out here on their own.

WORDS = ["Café", "cafe", "Núñez", "nunez", "support", "triage", "ÉTÉ", "ete", "bot", "AI", "5%"]


def folded(text: str) -> str:
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(bare.lower().split())


def expected_rank(title: str, description: str, query: str) -> int | None:
    t, d, q = folded(title), folded(description), folded(query)
    words = q.split(" ")
    if not all(w in t or w in d for w in words):
        return None
    if t == q:
        return 0
    if t.startswith(q):
        return 1
    if q in t:
        return 2
    return 3 if all(w in t for w in words) else 4


record = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
)


@settings(
    max_examples=15,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    records=st.lists(record, min_size=1, max_size=15),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
)
def test_hits_are_the_records_holding_every_word_in_rank_order(
    engine: Engine, records: list[tuple[str, str]], query: str
) -> None:
    _empty(engine)
    b = BundleBuilder()
    acct = b.account()
    ids = [
        b.initiative(acct, title=title, description=description or None)
        for title, description in records
    ]
    b.load(engine)
    expected = sorted(
        (rank, folded(title), record_id, title)
        for record_id, (title, description) in zip(ids, records, strict=True)
        if (rank := expected_rank(title, description, query)) is not None
    )
    found = hits(engine, acct, query, "initiative")
    assert [(h["id"], h["title"]) for h in found] == [(i, t) for _, _, i, t in expected]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"hi"', {'He said "hi" there'}),
        ('said "hi', {'He said "hi" there'}),
        ("near(x)", {"NEAR(x) AND y"}),
        ("x) and", {"NEAR(x) AND y"}),
        ("{title body} :", {"{title body} : z"}),
        ("* ^", set()),
        ("''; drop", set()),
    ],
)
def test_the_text_index_syntax_is_plain_text_in_a_query(
    engine: Engine, query: str, expected: set[str]
) -> None:
    # FTS5 reads quotes, parentheses, braces, colons, NEAR and * as syntax: each word is
    # given to it as a quoted phrase, so they are characters to find like any other.
    b = BundleBuilder()
    acct = b.account()
    for title in ('He said "hi" there', "NEAR(x) AND y", "{title body} : z", "Plain"):
        b.initiative(acct, title=title)
    b.load(engine)
    assert set(titles(engine, acct, query, "initiative")) == expected
