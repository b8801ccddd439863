"""The search tool: one query over every kind SPEC 4.B names, ranked and capped.

Ranking: an exact title match first, then a title that starts with the query, then
one that contains it, then a match found only in a secondary field (a description,
a key). Within a rank, kinds keep the order of `ALL_KINDS` and then titles sort
alphabetically. Records of the account come from the database, narrowed to the
account in repository.py; shipped content (pages, the metric library, platforms,
templates, help articles) comes from the catalog.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection

from airoi import catalog
from airoi.auth import Principal
from airoi.tools import repository
from airoi.tools.errors import ToolRefusal
from airoi.tools.models import SEARCH_KINDS, SearchHit, SearchKind, SearchResult
from airoi.tools.service import Pages, rolled_up

ALL_KINDS = SEARCH_KINDS
MAX_RESULTS = 25
MIN_QUERY = 2
SNIPPET_LENGTH = 160
SECONDARY = 3  # the rank of a match outside the title

_KIND_ORDER = {kind: index for index, kind in enumerate(ALL_KINDS)}
_SPACES = re.compile(r"\s+")
_NOT_TEXT = frozenset({"Cc", "Cs"})  # control characters and lone surrogates


@dataclass(order=True, frozen=True)
class _Ranked:
    rank: int
    kind_order: int
    title: str
    hit: SearchHit = field(compare=False)


def one_line(text: str | None, limit: int = SNIPPET_LENGTH) -> str:
    line = _SPACES.sub(" ", text or "").strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def text_rank(title: str, needle: str, *secondary: str | None) -> int | None:
    """0 exact, 1 prefix, 2 substring of the title; 3 found in a secondary text; else None."""
    folded = title.lower()
    if folded == needle:
        return 0
    if folded.startswith(needle):
        return 1
    if needle in folded:
        return 2
    if any(text and needle in text.lower() for text in secondary):
        return SECONDARY
    return None


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
        hit = SearchHit(kind=kind, id=id, key=key, title=title, snippet=one_line(snippet), url=url)
        self.ranked.append(_Ranked(rank, _KIND_ORDER[kind], title.lower(), hit))


def normalise(query: str) -> str:
    """The query as matched: runs of whitespace as one space, trimmed, lower case.

    SEMANTICS R27: a control character left after that (a NUL above all) or a lone surrogate
    is refused. A NUL ended the LIKE pattern in SQLite, so "\\x00\\x00" matched every
    record, and PostgreSQL text cannot hold one. LIKE wildcards need no refusal: the
    repository escapes them, so % and _ match themselves.
    """
    needle = _SPACES.sub(" ", query).strip().lower()
    if any(unicodedata.category(character) in _NOT_TEXT for character in needle):
        raise ToolRefusal("The query must be plain text without control characters.")
    if len(needle) < MIN_QUERY:
        raise ToolRefusal(f"The query must be at least {MIN_QUERY} characters long.")
    return needle


def search(
    db: Connection,
    principal: Principal,
    *,
    query: str,
    kinds: Sequence[SearchKind] | None,
    pages: Pages,
) -> SearchResult:
    needle = normalise(query)
    wanted = set(kinds) if kinds else set(ALL_KINDS)
    found = _Collector()
    # Each source returns at most one more than the cap, so the merged list knows has_more.
    limit = MAX_RESULTS + 1
    if "initiative" in wanted:
        _initiatives(found, db, principal, needle, limit, pages)
    if "page" in wanted:
        _pages(found, needle, pages)
    if "metric" in wanted:
        _metrics(found, db, principal, needle, limit, pages)
    if "connection" in wanted:
        _connections(found, db, principal, needle, limit, pages)
    if "platform" in wanted:
        _platforms(found, db, principal, needle, pages)
    if "vendor" in wanted:
        _vendors(found, db, principal, needle, limit)
    if "person" in wanted:
        _people(found, db, principal, needle, limit)
    if "template" in wanted:
        _templates(found, needle, pages)
    if "help_article" in wanted:
        _help(found, needle, pages)
    if "assessment" in wanted:
        _assessments(found, db, principal, needle, limit, pages)
    ranked = sorted(found.ranked)
    return SearchResult(
        query=query,
        results=[r.hit for r in ranked[:MAX_RESULTS]],
        has_more=len(ranked) > MAX_RESULTS,
    )


def _initiatives(
    found: _Collector,
    db: Connection,
    principal: Principal,
    needle: str,
    limit: int,
    pages: Pages,
) -> None:
    for row in repository.search_initiatives(db, principal, needle, limit):
        status = rolled_up(row.stage).replace("_", " ")
        sample = "Sample initiative" if row.is_sample else "Initiative"
        detail = f"{sample}, {row.stage} ({status})"
        if row.description:
            detail += f": {row.description}"
        found.add(
            int(row.rank),
            "initiative",
            row.title,
            detail,
            id=row.id,
            url=pages.url("initiative", id=row.id),
        )


def _pages(found: _Collector, needle: str, pages: Pages) -> None:
    for page in catalog.app_pages():
        if page.parameters:  # a page of one record is found through that record
            continue
        rank = text_rank(page.title, needle, page.description, page.key)
        if rank is not None:
            found.add(
                rank, "page", page.title, page.description, key=page.key, url=pages.url(page.key)
            )


def _metrics(
    found: _Collector,
    db: Connection,
    principal: Principal,
    needle: str,
    limit: int,
    pages: Pages,
) -> None:
    own_keys: set[str] = set()
    for row in repository.search_metrics(db, principal, needle, limit):
        own_keys.add(row.metric_key)
        unit = f" in {row.unit}" if row.unit else ""
        state = "" if row.active else " (inactive)"
        found.add(
            min(int(row.best), SECONDARY),
            "metric",
            row.name,
            f"Account metric {row.metric_key}{unit}{state}: {row.description or ''}".rstrip(": "),
            id=row.id,
            key=row.metric_key,
            url=pages.url("metrics"),
        )
    for metric in catalog.metric_library():
        if metric.key in own_keys:  # the account's own definition already stands for it
            continue
        rank = text_rank(metric.name, needle, metric.key, metric.description)
        if rank is not None:
            found.add(
                rank,
                "metric",
                metric.name,
                f"Library metric {metric.key}, {metric.metric_type} in {metric.unit}: "
                f"{metric.description}",
                key=metric.key,
            )


def _connections(
    found: _Collector,
    db: Connection,
    principal: Principal,
    needle: str,
    limit: int,
    pages: Pages,
) -> None:
    for row in repository.search_integrations(db, principal, needle, limit):
        title = row.name or row.platform
        synced = "never synced" if row.last_synced_at is None else "last synced"
        if row.last_synced_at is not None:
            synced += f" {row.last_synced_at:%Y-%m-%d}"
        found.add(
            int(row.best),
            "connection",
            title,
            f"Connection to {row.platform}, {row.status}, {synced}",
            id=row.id,
            url=pages.url("integrations"),
        )


def _platforms(
    found: _Collector, db: Connection, principal: Principal, needle: str, pages: Pages
) -> None:
    """Catalog platforms this account has not connected yet."""
    connected = repository.connected_platforms(db, principal)
    for platform in catalog.platforms():
        if platform.key.lower() in connected or platform.name.lower() in connected:
            continue
        rank = text_rank(platform.name, needle, platform.key, platform.category)
        if rank is not None:
            found.add(
                rank,
                "platform",
                platform.name,
                f"Not connected yet; connects by {platform.auth_type.replace('_', ' ')}",
                key=platform.key,
                url=pages.url("integration_connect", platform=platform.key),
            )


def _vendors(
    found: _Collector, db: Connection, principal: Principal, needle: str, limit: int
) -> None:
    for row in repository.search_vendors(db, principal, needle, limit):
        entries = "cost entry" if row.entry_count == 1 else "cost entries"
        found.add(
            int(row.rank),
            "vendor",
            row.name,
            f"Vendor on {row.entry_count} {entries}",
            id=row.id,
        )


def _people(
    found: _Collector, db: Connection, principal: Principal, needle: str, limit: int
) -> None:
    for row in repository.search_people(db, principal, needle, limit):
        found.add(int(row.rank), "person", row.name, f"Person, {row.role}", id=row.id)


def _templates(found: _Collector, needle: str, pages: Pages) -> None:
    for template in catalog.templates():
        rank = text_rank(template.title, needle, template.description, template.category)
        if rank is not None:
            found.add(
                rank,
                "template",
                template.title,
                f"Initiative template: {template.description}",
                key=template.key,
                url=pages.url("template", key=template.key),
            )


def _help(found: _Collector, needle: str, pages: Pages) -> None:
    for article in catalog.help_articles():  # published only (SEMANTICS R28)
        rank = text_rank(article.title, needle, article.summary, article.slug)
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


def _assessments(
    found: _Collector,
    db: Connection,
    principal: Principal,
    needle: str,
    limit: int,
    pages: Pages,
) -> None:
    for row in repository.search_assessments(db, principal, needle, limit):
        found.add(
            int(row.rank),
            "assessment",
            row.title,
            "Active assessment",
            id=row.id,
            url=pages.url("assessment", id=row.id),
        )
