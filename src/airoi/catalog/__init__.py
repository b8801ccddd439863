"""Shipped content, read from the data files beside this module (CONVENTIONS: catalog/).

The content is data, not code: `platforms.json` (what an account connects and how),
`help/*.md` (help articles: a small front-matter block, `---`, then Markdown),
`metrics.json` (the canonical metric library), `templates.json` (initiative
templates) and `pages.json` (the application's pages, as paths relative to
AIROI_APP_URL). Each file is read once through importlib.resources, so the
reader works from a wheel as well as from a source tree, and the result is cached.

A malformed file raises CatalogError naming the file and the entry: the content
ships with the package, so a mistake in it is a bug to fail loudly on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any, Final
from urllib.parse import quote

__all__ = [
    "AUTH_TYPES",
    "METRIC_TYPES",
    "AppPage",
    "CatalogError",
    "HelpArticle",
    "LibraryMetric",
    "Platform",
    "Template",
    "app_pages",
    "find_platform",
    "help_article",
    "help_articles",
    "metric_library",
    "page_path",
    "platforms",
    "templates",
]

# The auth types a connection may have (SPEC 2.9).
AUTH_TYPES: Final = frozenset(
    {"oauth", "api_key", "basic", "webhook", "github_app", "service_account"}
)
METRIC_TYPES: Final = frozenset({"count", "duration", "percentage", "currency", "ratio", "score"})

_PLACEHOLDER: Final = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_SLUG: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_KEY: Final = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_FRONT_MATTER_FIELDS: Final = ("id", "slug", "title", "summary", "published")


class CatalogError(ValueError):
    """A shipped data file is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class Platform:
    """A platform an account can connect, with its setup guide."""

    key: str
    name: str
    category: str
    auth_type: str
    metric_categories: tuple[str, ...]
    credential_location: str
    steps: tuple[str, ...]
    setup_script: str | None
    tips: tuple[str, ...]
    docs_hint: str


@dataclass(frozen=True)
class HelpArticle:
    id: int
    slug: str
    title: str
    summary: str
    body: str
    published: bool


@dataclass(frozen=True)
class LibraryMetric:
    """A canonical metric of the library; an account's own metrics use these keys."""

    key: str
    name: str
    metric_type: str
    unit: str
    category: str
    description: str


@dataclass(frozen=True)
class Template:
    """A starting point for a new initiative."""

    key: str
    title: str
    category: str
    description: str
    hypothesis: str
    suggested_metric_keys: tuple[str, ...]
    typical_cost_types: tuple[str, ...]


@dataclass(frozen=True)
class AppPage:
    """A page of the application; `path` is relative and may hold {placeholders}."""

    key: str
    title: str
    path: str
    description: str

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(_PLACEHOLDER.findall(self.path))


# Reading -------------------------------------------------------------------------------


def _data_dir() -> Traversable:
    return files(__name__)


def _load_json_list(name: str) -> list[dict[str, Any]]:
    text = _data_dir().joinpath(name).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{name}: not valid JSON ({exc})") from exc
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise CatalogError(f"{name}: expected a list of objects")
    return data


class _Entry:
    """Typed access to one object of a data file, with errors that say where."""

    def __init__(self, source: str, index: int, raw: dict[str, Any]) -> None:
        self.raw = raw
        key = raw.get("key")
        self.label = f"{source}[{index}]" + (f" ({key})" if isinstance(key, str) else "")

    def _get(self, field: str) -> Any:
        if field not in self.raw:
            raise CatalogError(f"{self.label}: missing field {field!r}")
        return self.raw[field]

    def text(self, field: str) -> str:
        value = self._get(field)
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{self.label}.{field}: expected a non-empty string")
        return value

    def optional_text(self, field: str) -> str | None:
        value = self._get(field)
        if value is None:
            return None
        return self.text(field)

    def texts(self, field: str) -> tuple[str, ...]:
        value = self._get(field)
        if not isinstance(value, list) or not all(
            isinstance(item, str) and item.strip() for item in value
        ):
            raise CatalogError(f"{self.label}.{field}: expected a list of non-empty strings")
        return tuple(value)

    def key(self, field: str = "key") -> str:
        value = self.text(field)
        if not _KEY.fullmatch(value):
            raise CatalogError(f"{self.label}.{field}: {value!r} is not a snake_case key")
        return value

    def one_of(self, field: str, allowed: frozenset[str]) -> str:
        value = self.text(field)
        if value not in allowed:
            raise CatalogError(
                f"{self.label}.{field}: {value!r} is not one of {', '.join(sorted(allowed))}"
            )
        return value


def _entries(name: str) -> list[_Entry]:
    return [_Entry(name, index, raw) for index, raw in enumerate(_load_json_list(name))]


def _unique(name: str, keys: list[str]) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise CatalogError(f"{name}: the key {key!r} appears more than once")
        seen.add(key)


@cache
def platforms() -> tuple[Platform, ...]:
    """Every platform of the catalog, in file order."""
    result = tuple(
        Platform(
            key=entry.key(),
            name=entry.text("name"),
            category=entry.key("category"),
            auth_type=entry.one_of("auth_type", AUTH_TYPES),
            metric_categories=entry.texts("metric_categories"),
            credential_location=entry.text("credential_location"),
            steps=entry.texts("steps"),
            setup_script=entry.optional_text("setup_script"),
            tips=entry.texts("tips"),
            docs_hint=entry.text("docs_hint"),
        )
        for entry in _entries("platforms.json")
    )
    _unique("platforms.json", [p.key for p in result])
    return result


def _fold(text: str) -> str:
    """Lower case without spaces, underscores or hyphens: "GitHub Copilot" == "github_copilot"."""
    return re.sub(r"[\s_\-]+", "", text).casefold()


@cache
def _platform_index() -> dict[str, Platform]:
    index: dict[str, Platform] = {}
    for platform in platforms():  # keys first, so a key always wins over another's name
        index.setdefault(_fold(platform.key), platform)
    for platform in platforms():
        index.setdefault(_fold(platform.name), platform)
    return index


def find_platform(text: str) -> Platform | None:
    """The platform whose key or name matches `text`, ignoring case, spaces, `_` and `-`."""
    folded = _fold(text)
    return _platform_index().get(folded) if folded else None


def _parse_article(name: str, text: str) -> HelpArticle:
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # tolerate an opening fence
        lines = lines[1:]
    try:
        fence = next(i for i, line in enumerate(lines) if line.strip() == "---")
    except StopIteration:
        raise CatalogError(f"help/{name}: no '---' line ends the front matter") from None
    fields: dict[str, str] = {}
    for line in lines[:fence]:
        if not line.strip():
            continue
        field, sep, value = line.partition(":")
        field = field.strip()
        if not sep or field not in _FRONT_MATTER_FIELDS:
            raise CatalogError(f"help/{name}: unexpected front matter line {line!r}")
        if field in fields:
            raise CatalogError(f"help/{name}: front matter field {field!r} given twice")
        fields[field] = value.strip()
    missing = [f for f in _FRONT_MATTER_FIELDS if not fields.get(f)]
    if missing:
        raise CatalogError(f"help/{name}: front matter lacks {', '.join(missing)}")
    if not fields["id"].isdigit():
        raise CatalogError(f"help/{name}: id must be a positive integer")
    if not _SLUG.fullmatch(fields["slug"]):
        raise CatalogError(f"help/{name}: slug {fields['slug']!r} is not kebab-case")
    if fields["published"] not in ("true", "false"):
        raise CatalogError(f"help/{name}: published must be true or false")
    body = "\n".join(lines[fence + 1 :]).strip()
    if not body:
        raise CatalogError(f"help/{name}: the article has no body")
    return HelpArticle(
        id=int(fields["id"]),
        slug=fields["slug"],
        title=fields["title"],
        summary=fields["summary"],
        body=body + "\n",
        published=fields["published"] == "true",
    )


@cache
def _all_articles() -> tuple[HelpArticle, ...]:
    folder = _data_dir().joinpath("help")
    names = sorted(item.name for item in folder.iterdir() if item.name.endswith(".md"))
    articles = tuple(
        _parse_article(name, folder.joinpath(name).read_text(encoding="utf-8")) for name in names
    )
    _unique("help/", [str(a.id) for a in articles])
    _unique("help/", [a.slug for a in articles])
    return tuple(sorted(articles, key=lambda a: a.id))


def help_articles(published_only: bool = True) -> tuple[HelpArticle, ...]:
    """Help articles ordered by id; drafts only when `published_only` is false."""
    articles = _all_articles()
    return tuple(a for a in articles if a.published) if published_only else articles


def help_article(*, id: int | None = None, slug: str | None = None) -> HelpArticle | None:
    """One published article, by id or by slug; when both are given the id wins (R28)."""
    for article in help_articles():
        if (id is not None and article.id == id) or (
            id is None and slug is not None and article.slug == slug
        ):
            return article
    return None


@cache
def metric_library() -> tuple[LibraryMetric, ...]:
    """The canonical metrics, in file order."""
    result = tuple(
        LibraryMetric(
            key=entry.key(),
            name=entry.text("name"),
            metric_type=entry.one_of("metric_type", METRIC_TYPES),
            unit=entry.text("unit"),
            category=entry.key("category"),
            description=entry.text("description"),
        )
        for entry in _entries("metrics.json")
    )
    _unique("metrics.json", [m.key for m in result])
    return result


@cache
def templates() -> tuple[Template, ...]:
    """Initiative templates, in file order; every suggested metric is in the library."""
    known = {m.key for m in metric_library()}
    result: list[Template] = []
    for entry in _entries("templates.json"):
        template = Template(
            key=entry.key(),
            title=entry.text("title"),
            category=entry.key("category"),
            description=entry.text("description"),
            hypothesis=entry.text("hypothesis"),
            suggested_metric_keys=entry.texts("suggested_metric_keys"),
            typical_cost_types=entry.texts("typical_cost_types"),
        )
        unknown = [k for k in template.suggested_metric_keys if k not in known]
        if unknown:
            raise CatalogError(
                f"{entry.label}.suggested_metric_keys: not in the library: {', '.join(unknown)}"
            )
        result.append(template)
    _unique("templates.json", [t.key for t in result])
    return tuple(result)


@cache
def app_pages() -> tuple[AppPage, ...]:
    """The application's pages, in file order; paths are relative to AIROI_APP_URL."""
    result: list[AppPage] = []
    for entry in _entries("pages.json"):
        page = AppPage(
            key=entry.key(),
            title=entry.text("title"),
            path=entry.text("path"),
            description=entry.text("description"),
        )
        if not page.path.startswith("/"):
            raise CatalogError(f"{entry.label}.path: must start with '/'")
        result.append(page)
    _unique("pages.json", [p.key for p in result])
    return tuple(result)


@cache
def _pages_by_key() -> dict[str, AppPage]:
    return {page.key: page for page in app_pages()}


def page_path(key: str, /, **params: str) -> str:
    """The relative path of page `key`, its {placeholders} filled from `params`.

    Each value is percent-encoded as one path segment. `key` is positional-only so a
    page may have a {key} placeholder (`page_path("template", key="support_triage")`).
    An unknown page raises KeyError; a missing or unexpected parameter raises ValueError.
    """
    page = _pages_by_key().get(key)
    if page is None:
        raise KeyError(f"no application page {key!r}")
    wanted = set(page.parameters)
    missing = wanted - params.keys()
    extra = params.keys() - wanted
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(sorted(missing))}")
        if extra:
            problems.append(f"unexpected {', '.join(sorted(extra))}")
        raise ValueError(f"page {key!r} ({page.path}): {'; '.join(problems)}")
    return _PLACEHOLDER.sub(lambda m: quote(str(params[m.group(1)]), safe=""), page.path)


@dataclass(frozen=True)
class Pages:
    """Absolute application URLs: AIROI_APP_URL plus a catalog page path."""

    app_url: str

    def url(self, page: str, /, **params: Any) -> str | None:
        """None when the catalog has no such page (a missing page is not an error)."""
        try:
            path = page_path(page, **{k: str(v) for k, v in params.items()})
        except (KeyError, ValueError):
            return None
        return self.app_url.rstrip("/") + path
