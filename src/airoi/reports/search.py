"""Search: one query over every kind SPEC 4.B names, ranked and capped (the search tool's).

Matching (issue 23): the query and every text searched are folded alike (accents removed,
case folded: "tomas" finds "Tomás"), the query is split into words, and a hit holds every
word (AND), each as a substring of its title or of a secondary text (a description, a key,
a platform, the other names a vendor goes by). Names (people, vendors, connections) and
platforms are also found with a typing mistake in a word of 4 or more characters ("zendsk"
finds Zendesk): one edit for words up to 7 characters, two for longer ones.

Ranking: the title equal to the query first, then a title that starts with it, then one that
holds it, then one that holds every word, then a hit whose words are partly found outside
the title, then the hits found despite a typing mistake. Within a rank, kinds keep the order
of `ALL_KINDS`, then folded titles sort by code point, then records by id.

Records of the account are matched by the store's own index over `search_entries` (an FTS5
trigram table on SQLite, trigram GIN indexes on PostgreSQL; airoi.db.search_index), always
narrowed to the principal's account; shipped content (pages, the metric library, platforms,
templates, help articles) comes from the catalog and is matched in memory.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    TextClause,
    and_,
    case,
    column,
    func,
    or_,
    select,
    table,
    text,
)

from airoi import catalog
from airoi.auth import Principal
from airoi.catalog import Pages
from airoi.db import tables
from airoi.db.search_index import FTS_TABLE, fold, tokens
from airoi.reports import lookups
from airoi.reports.initiatives import rolled_up
from airoi.vocabulary import SEARCH_KINDS, SearchKind

ALL_KINDS = SEARCH_KINDS
MAX_RESULTS = 25
MIN_QUERY = 2
SNIPPET_LENGTH = 160
# Ranks, best first.
EXACT, PREFIX, PHRASE, WORDS, SECONDARY, TYPO = range(6)
# The kinds found despite a typing mistake, and how many of the account's names are weighed.
NAME_KINDS = ("connection", "vendor", "person")
TYPO_CANDIDATES = 200
TRIGRAM = 3  # words this long are looked up in the trigram index; shorter ones filter

_KIND_ORDER = {kind: index for index, kind in enumerate(ALL_KINDS)}
_STORED_KINDS: tuple[SearchKind, ...] = (
    "initiative",
    "metric",
    "connection",
    "vendor",
    "person",
    "assessment",
)
_NOT_TEXT = frozenset({"Cc", "Cs"})  # control characters and lone surrogates
_folded = functools.lru_cache(maxsize=8192)(fold)  # catalog texts, folded once


class QueryRefused(ValueError):
    """A query that cannot be searched; its message is one sentence saying why (SEMANTICS R27)."""


@dataclass(frozen=True)
class Found:
    """One hit: a record of the account (its id) or shipped content (its catalog key)."""

    kind: SearchKind
    id: int | None
    key: str | None
    title: str
    snippet: str
    url: str | None


@dataclass(frozen=True)
class Findings:
    """The hits of one query, best first, at most MAX_RESULTS of them."""

    query: str
    results: list[Found]
    has_more: bool


@dataclass(frozen=True)
class Query:
    """The folded query and its distinct words, in order."""

    phrase: str
    words: tuple[str, ...]


@dataclass(order=True, frozen=True)
class _Ranked:
    rank: int
    kind_order: int
    title: str
    id: int  # a record's id, 0 for catalog content: equal titles of one kind in id order
    hit: Found = field(compare=False)


def one_line(text: str | None, limit: int = SNIPPET_LENGTH) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def normalise(query: str) -> str:
    """The query as matched: folded (accents removed, case folded), runs of whitespace as one
    space, trimmed.

    SEMANTICS R27: a control character left after that (a NUL above all) or a lone surrogate
    is refused. A NUL ended the LIKE pattern in SQLite, so "\\x00\\x00" matched every
    record, and PostgreSQL text cannot hold one. LIKE wildcards need no refusal: they are
    escaped, so % and _ match themselves.
    """
    trimmed = " ".join(query.split())
    if any(unicodedata.category(character) in _NOT_TEXT for character in trimmed):
        raise QueryRefused("The query must be plain text without control characters.")
    folded = fold(trimmed)
    if len(trimmed) < MIN_QUERY or len(folded) < MIN_QUERY:
        raise QueryRefused(f"The query must be at least {MIN_QUERY} characters long.")
    return folded


def parse(query: str) -> Query:
    phrase = normalise(query)
    return Query(phrase, tuple(dict.fromkeys(phrase.split(" "))))


def rank_of(title: str, body: str, query: Query) -> int | None:
    """The rank of folded texts holding every word of the query, else None."""
    if not all(word in title or word in body for word in query.words):
        return None
    if title == query.phrase:
        return EXACT
    if title.startswith(query.phrase):
        return PREFIX
    if query.phrase in title:
        return PHRASE
    if all(word in title for word in query.words):
        return WORDS
    return SECONDARY


def text_rank(title: str, query: Query, *secondary: str | None) -> int | None:
    """`rank_of` for catalog texts, folded here; secondary texts one to a line."""
    body = "\n".join(_folded(text) for text in secondary if text)
    return rank_of(_folded(title), body, query)


def typo_budget(word: str) -> int:
    """The edits allowed in a word: none under 4 characters, 1 up to 7, 2 from 8."""
    return 0 if len(word) < 4 else 1 if len(word) < 8 else 2


def distance(a: str, b: str, bound: int) -> int:
    """Edit distance (insert, delete, replace, swap two neighbours), or bound + 1 when more."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    before: list[int] | None = None
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if (
                before is not None
                and i > 1
                and j > 1
                and a[i - 1] == b[j - 2]
                and a[i - 2] == b[j - 1]
            ):
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > bound:
            return bound + 1
        before, row = row, current
    return min(row[len(b)], bound + 1)


@functools.lru_cache(maxsize=65536)
def _near(word: str, token: str, budget: int) -> bool:
    """Names share most of their words ("vendor", "inc"): each pair is worked out once."""
    return distance(word, token, budget) <= budget


def near_match(title: str, body: str, query: Query) -> bool:
    """Every word in the folded texts, some only within their typing budget of a word there
    (a hit that holds every word as it is was ranked already)."""
    words = tokens(title) + tokens(body)
    mistaken = False
    for word in query.words:
        if word in title or word in body:
            continue
        budget = typo_budget(word)
        if not budget or not any(_near(word, token, budget) for token in words):
            return False
        mistaken = True
    return mistaken


def bigrams(query: Query) -> list[str]:
    """The letter pairs of the words that may carry a typing mistake. A name within the
    budget of such a word shares at least one with it, but for a swap of the middle letters
    of a 4-letter word ("amce" for "acme"): not found."""
    pairs = {
        word[i : i + 2] for word in query.words if typo_budget(word) for i in range(len(word) - 1)
    }
    return sorted(pairs)


class _Collector:
    def __init__(self) -> None:
        self.ranked: list[_Ranked] = []

    def add(
        self,
        rank: int,
        kind: SearchKind,
        title: str,
        snippet: str,
        *,
        id: int | None = None,
        key: str | None = None,
        url: str | None = None,
    ) -> None:
        hit = Found(kind=kind, id=id, key=key, title=title, snippet=one_line(snippet), url=url)
        self.ranked.append(_Ranked(rank, _KIND_ORDER[kind], _folded(title), id or 0, hit))


def search(
    db: Connection,
    principal: Principal,
    *,
    query: str,
    kinds: Sequence[SearchKind] | None,
    pages: Pages,
) -> Findings:
    parsed = parse(query)
    wanted = set(kinds) if kinds else set(ALL_KINDS)
    found = _Collector()
    # Each source returns at most one more than the cap, so the merged list knows has_more.
    limit = MAX_RESULTS + 1
    stored = [kind for kind in _STORED_KINDS if kind in wanted]
    own_metric_keys: set[str] = set()
    if stored:
        hits = matched(db, principal, parsed, stored, limit)
        names = [kind for kind in NAME_KINDS if kind in wanted]
        if names:
            seen = {(kind, ref_id) for kind, ref_id, _ in hits}
            hits += [
                hit
                for hit in nearly_matched(db, principal, parsed, names, limit)
                if hit[:2] not in seen
            ]
        own_metric_keys = _records(found, db, principal, hits, pages)
    if "page" in wanted:
        _pages(found, parsed, pages)
    if "metric" in wanted:
        _library_metrics(found, parsed, own_metric_keys)
    if "platform" in wanted:
        _platforms(found, db, principal, parsed, pages)
    if "template" in wanted:
        _templates(found, parsed, pages)
    if "help_article" in wanted:
        _help(found, parsed, pages)
    ranked = sorted(found.ranked)
    return Findings(
        query=query,
        results=[r.hit for r in ranked[:MAX_RESULTS]],
        has_more=len(ranked) > MAX_RESULTS,
    )


# records of the account ---------------------------------------------------------------------

_entries = tables.search_entries
_fts = table(FTS_TABLE, column("rowid"))
Hit = tuple[str, int, int]  # kind, record id, rank


def _contains(word: str) -> ColumnElement[bool]:
    return or_(
        _entries.c.title.contains(word, autoescape=True),
        _entries.c.body.contains(word, autoescape=True),
    )


def _kind_order() -> Any:
    return case({kind: _KIND_ORDER[kind] for kind in _STORED_KINDS}, value=_entries.c.kind)


def _title_order(db: Connection) -> Any:
    # Code point order, as the catalog's titles sort in Python.
    return _entries.c.title.collate("C") if db.dialect.name == "postgresql" else _entries.c.title


def _fts_phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def matched(
    db: Connection, principal: Principal, query: Query, kinds: Sequence[str], limit: int
) -> list[Hit]:
    """The account's records holding every word, best first, at most `limit`.

    Words of 3 or more characters are looked up in the trigram index: FTS5 on SQLite (one
    MATCH of all of them), GIN on PostgreSQL (a LIKE each). Shorter words, which no trigram
    index can look up, narrow what those find; a query of short words only reads the
    account's entries of the kinds wanted.
    """
    e = _entries
    title = e.c.title
    rank = case(
        (title == query.phrase, EXACT),
        (title.startswith(query.phrase, autoescape=True), PREFIX),
        (title.contains(query.phrase, autoescape=True), PHRASE),
        (and_(*(title.contains(word, autoescape=True) for word in query.words)), WORDS),
        else_=SECONDARY,
    ).label("rank")
    conditions: list[ColumnElement[bool] | TextClause] = [
        e.c.account_id == principal.account_id,
        e.c.kind.in_(kinds),
    ]
    source: Any = e
    if db.dialect.name == "sqlite":
        long = [word for word in query.words if len(word) >= TRIGRAM]
        conditions += [_contains(word) for word in query.words if len(word) < TRIGRAM]
        if long:
            # From the FTS table first: the account's index would walk all its entries.
            match = "{title body} : (" + " AND ".join(map(_fts_phrase, long)) + ")"
            source = _fts.join(e, e.c.id == _fts.c.rowid)
            conditions.append(text(f"{FTS_TABLE} MATCH :match").bindparams(match=match))
    else:
        conditions += [_contains(word) for word in query.words]
    rows = db.execute(
        select(e.c.kind, e.c.ref_id, rank)
        .select_from(source)
        .where(*conditions)
        .order_by(rank, _kind_order(), _title_order(db), e.c.ref_id)
        .limit(limit)
    )
    return [(kind, ref_id, int(rank)) for kind, ref_id, rank in rows]


def nearly_matched(
    db: Connection, principal: Principal, query: Query, kinds: Sequence[str], limit: int
) -> list[Hit]:
    """Names found despite a typing mistake (rank TYPO), at most `limit`.

    The account's names of `kinds` sharing a letter pair with a word that may carry a
    mistake are weighed, those sharing the most first, at most TYPO_CANDIDATES of them; the
    edit distance of their words decides.
    """
    pairs = bigrams(query)
    if not pairs:
        return []
    e = _entries
    # Written as text: dozens of pairs built as expression objects cost more than the query.
    find = "instr" if db.dialect.name == "sqlite" else "strpos"

    def holds(name: str) -> str:
        return (
            f"({find}(search_entries.title, :{name}) > 0 "
            f"OR {find}(search_entries.body, :{name}) > 0)"
        )

    any_pair = text("(" + " OR ".join(holds(f"w{i}") for i in range(len(pairs))) + ")").bindparams(
        **{f"w{i}": pair for i, pair in enumerate(pairs)}
    )
    shared = text(
        " + ".join(f"(CASE WHEN {holds(f'o{i}')} THEN 1 ELSE 0 END)" for i in range(len(pairs)))
        + " DESC"
    ).bindparams(**{f"o{i}": pair for i, pair in enumerate(pairs)})
    rows = db.execute(
        select(e.c.kind, e.c.ref_id, e.c.title, e.c.body)
        .where(e.c.account_id == principal.account_id, e.c.kind.in_(kinds), any_pair)
        .order_by(shared, _kind_order(), _title_order(db), e.c.ref_id)
        .limit(TYPO_CANDIDATES)
    )
    near = [
        (kind, ref_id, TYPO) for kind, ref_id, title, body in rows if near_match(title, body, query)
    ]
    return near[:limit]


def _by_kind(hits: Iterable[Hit]) -> dict[str, dict[int, int]]:
    grouped: dict[str, dict[int, int]] = {}
    for kind, ref_id, rank in hits:
        grouped.setdefault(kind, {})[ref_id] = rank
    return grouped


def _records(
    found: _Collector, db: Connection, principal: Principal, hits: list[Hit], pages: Pages
) -> set[str]:
    """Each hit shown from its record; answers the keys of the account's metrics found."""
    grouped = _by_kind(hits)
    account = principal.account_id
    own_keys: set[str] = set()
    if ranks := grouped.get("initiative"):
        t = tables.initiatives
        rows = db.execute(
            select(t.c.id, t.c.title, t.c.stage, t.c.is_sample, t.c.description).where(
                t.c.account_id == account, t.c.id.in_(ranks)
            )
        )
        for row in rows:
            status = rolled_up(row.stage).replace("_", " ")
            sample = "Sample initiative" if row.is_sample else "Initiative"
            detail = f"{sample}, {row.stage} ({status})"
            if row.description:
                detail += f": {row.description}"
            found.add(
                ranks[row.id],
                "initiative",
                row.title,
                detail,
                id=row.id,
                url=pages.url("initiative", id=row.id),
            )
    if ranks := grouped.get("metric"):
        m = tables.metrics
        rows = db.execute(
            select(m.c.id, m.c.metric_key, m.c.name, m.c.description, m.c.unit, m.c.active).where(
                m.c.account_id == account, m.c.id.in_(ranks)
            )
        )
        for row in rows:
            own_keys.add(row.metric_key)
            unit = f" in {row.unit}" if row.unit else ""
            state = "" if row.active else " (inactive)"
            found.add(
                ranks[row.id],
                "metric",
                row.name,
                f"Account metric {row.metric_key}{unit}{state}: {row.description or ''}".rstrip(
                    ": "
                ),
                id=row.id,
                key=row.metric_key,
                url=pages.url("metrics"),
            )
    if ranks := grouped.get("connection"):
        i = tables.integrations
        rows = db.execute(
            select(*lookups.INTEGRATION_COLUMNS).where(i.c.account_id == account, i.c.id.in_(ranks))
        )
        for row in rows:
            synced = "never synced" if row.last_synced_at is None else "last synced"
            if row.last_synced_at is not None:
                synced += f" {row.last_synced_at:%Y-%m-%d}"
            found.add(
                ranks[row.id],
                "connection",
                row.name or row.platform,
                f"Connection to {row.platform}, {row.status}, {synced}",
                id=row.id,
                url=pages.url("integrations"),
            )
    if ranks := grouped.get("vendor"):
        v, c = tables.vendors, tables.cost_entries
        entry_count = (
            select(func.count())
            .select_from(c)
            .where(c.c.account_id == account, c.c.vendor_id == v.c.id)
            .scalar_subquery()
        )
        rows = db.execute(
            select(v.c.id, v.c.name, entry_count.label("entry_count")).where(
                v.c.account_id == account, v.c.id.in_(ranks)
            )
        )
        for row in rows:
            entries = "cost entry" if row.entry_count == 1 else "cost entries"
            snippet = f"Vendor on {row.entry_count} {entries}"
            if ranks[row.id] == SECONDARY:
                snippet += ", found by another name it goes by"
            found.add(ranks[row.id], "vendor", row.name, snippet, id=row.id)
    if ranks := grouped.get("person"):
        # The e-mail column is never selected (SEMANTICS R15).
        u = tables.users
        rows = db.execute(
            select(u.c.id, u.c.name, u.c.role).where(u.c.account_id == account, u.c.id.in_(ranks))
        )
        for row in rows:
            found.add(ranks[row.id], "person", row.name, f"Person, {row.role}", id=row.id)
    if ranks := grouped.get("assessment"):
        a = tables.assessments
        rows = db.execute(
            select(a.c.id, a.c.title).where(a.c.account_id == account, a.c.id.in_(ranks))
        )
        for row in rows:
            found.add(
                ranks[row.id],
                "assessment",
                row.title,
                "Active assessment",
                id=row.id,
                url=pages.url("assessment", id=row.id),
            )
    return own_keys


# shipped content ----------------------------------------------------------------------------


def _pages(found: _Collector, query: Query, pages: Pages) -> None:
    for page in catalog.app_pages():
        if page.parameters:  # a page of one record is found through that record
            continue
        rank = text_rank(page.title, query, page.description, page.key)
        if rank is not None:
            found.add(
                rank, "page", page.title, page.description, key=page.key, url=pages.url(page.key)
            )


def _library_metrics(found: _Collector, query: Query, own_keys: set[str]) -> None:
    for metric in catalog.metric_library():
        if metric.key in own_keys:  # the account's own definition already stands for it
            continue
        rank = text_rank(metric.name, query, metric.key, metric.description)
        if rank is not None:
            found.add(
                rank,
                "metric",
                metric.name,
                f"Library metric {metric.key}, {metric.metric_type} in {metric.unit}: "
                f"{metric.description}",
                key=metric.key,
            )


def _platforms(
    found: _Collector, db: Connection, principal: Principal, query: Query, pages: Pages
) -> None:
    """Catalog platforms this account has not connected yet; by name or key, a typing
    mistake allowed."""
    connected = lookups.connected_platforms(db, principal)
    for platform in catalog.platforms():
        if platform.key.lower() in connected or platform.name.lower() in connected:
            continue
        rank = text_rank(platform.name, query, platform.key, platform.category)
        if rank is None and near_match(_folded(platform.name), _folded(platform.key), query):
            rank = TYPO
        if rank is not None:
            found.add(
                rank,
                "platform",
                platform.name,
                f"Not connected yet; connects by {platform.auth_type.replace('_', ' ')}",
                key=platform.key,
                url=pages.url("integration_connect", platform=platform.key),
            )


def _templates(found: _Collector, query: Query, pages: Pages) -> None:
    for template in catalog.templates():
        rank = text_rank(template.title, query, template.description, template.category)
        if rank is not None:
            found.add(
                rank,
                "template",
                template.title,
                f"Initiative template: {template.description}",
                key=template.key,
                url=pages.url("template", key=template.key),
            )


def _help(found: _Collector, query: Query, pages: Pages) -> None:
    for article in catalog.help_articles():  # published only (SEMANTICS R28)
        rank = text_rank(article.title, query, article.summary, article.slug)
        if rank is not None:
            found.add(
                rank,
                "help_article",
                article.title,
                article.summary,
                id=article.id,
                key=article.slug,
                url=pages.url("help_article", slug=article.slug),
            )
