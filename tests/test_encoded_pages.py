"""Pages whose rows SQLite writes as JSON: the same bytes as the rows built and encoded in Python.

On SQLite a list whose Shape allows it (`Shape.sqlite_json`) serves each row as the text the
database writes, joined; elsewhere (and for rows with a float) the Structs are built and
msgspec encodes them. The body, and so its ETag, must not tell the two apart: a copy that
walked a list before keeps its rows and its If-None-Match (SEMANTICS R13, R36).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import date, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Boolean, Date, Engine, Float, Integer, String, create_engine, literal, select
from sqlalchemy.dialects import sqlite

from airoi.db.migrate import upgrade
from airoi.listing import Cursors, EncodedPage, Page, ShapedList
from airoi.load import load_bundle
from airoi.reports.cost_entries import COST_ENTRIES, COST_ENTRY, CostEntryList
from airoi.reports.deletions import DELETION, DELETIONS, DeletionList
from airoi.reports.observations import OBSERVATION
from airoi.reports.value_entries import VALUE_ENTRY
from airoi.rows import Shape
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
MEMORY = create_engine("sqlite://")
EARLY = datetime(2026, 3, 1, 9, 0, 0)
LATER = datetime(2026, 3, 2, 9, 0, 0)
# Every character JSON escapes, then some it must not: the loader's texts reach the page.
CONTROL = "".join(chr(i) for i in range(1, 0x20))
TRICKY = [
    CONTROL,
    'quote " backslash \\ slash / tab \t del \x7f',
    "é 中文 😀 \u2028 \u2029 \ufeff \u200f",
    "",
]


def _world(engine: Engine) -> tuple[str, int, list[int]]:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    doomed = []
    for k, text in enumerate(TRICKY):
        b.cost_entry(
            initiative,
            amount_cents=[2**62, -(2**61), 0, None][k],
            currency=None if k == 3 else "USD",
            description=text,
            notes=None if k == 1 else text[::-1],
            vendor_name=text or None,
            is_estimated=k % 2 == 0,
            locked=k == 1,
            period_start=None if k == 2 else f"0{k + 1}01-0{k + 1}-0{k + 1}",
            period_end=f"2026-12-{k + 10}" if k else None,
            source_type="csv" if k else None,
            source_ref=text or None,
        )
    for _ in range(3):
        doomed.append(b.cost_entry(initiative, description="doomed"))
    b.load(engine, now=EARLY)
    # Later stamps, so that a walk crosses from one stamp to the next (SQLite's two seeks).
    later = BundleBuilder(first_id=1000)
    for k in range(3):
        later.cost_entry(initiative, description=f"later {k}", is_estimated=True)
    load_bundle(engine, {"cost_entries": later.data["cost_entries"]}, now=LATER)
    load_bundle(engine, {"delete": {"cost_entries": doomed}}, now=LATER)
    return token, acct, doomed


def _struct_body(
    engine: Engine, query: ShapedList, envelope: type[msgspec.Struct], acct: int, **asked: object
) -> bytes:
    """The body of the rows built as Structs and encoded by msgspec (the path of every store
    but SQLite), on a connection of the test's own."""
    with engine.connect() as conn:
        page = query.rows(conn, acct, cursors=Cursors(), **asked)  # type: ignore[arg-type]
        return msgspec.json.encode(envelope(data=list(page.rows), page=page.info))


@pytest.mark.parametrize(
    ("path", "query", "envelope"),
    [("cost_entries", COST_ENTRIES, CostEntryList), ("deletions", DELETIONS, DeletionList)],
)
def test_each_page_is_the_bytes_of_the_rows_built_and_encoded(
    client: Client,
    engine: Engine,
    db_url: str,
    path: str,
    query: ShapedList,
    envelope: type[msgspec.Struct],
) -> None:
    token, acct, doomed = _world(engine)
    cursor = None
    pages = rows = 0
    while True:
        asked = {"limit": 2, "cursor": cursor}
        response = client.get(
            f"/api/v1/{path}",
            params={k: v for k, v in asked.items() if v is not None},
            headers=bearer(token),
        )
        assert response.status_code == 200, response.text
        assert response.content == _struct_body(engine, query, envelope, acct, **asked)
        served = response.json()
        pages, rows = pages + 1, rows + len(served["data"])
        cursor = served["page"]["next_cursor"]
        if cursor is None:
            break
    # Every row walked: the four tricky ones and the three later ones (cost entries), or the
    # three tombstones.
    assert rows == (len(TRICKY) + 3 if path == "cost_entries" else len(doomed))
    assert pages == (rows + 1) // 2


def test_sqlite_serves_the_rows_it_wrote_and_other_stores_the_structs(
    engine: Engine, db_url: str
) -> None:
    _, acct, _ = _world(engine)
    with engine.connect() as conn:
        page = COST_ENTRIES.served(conn, acct, cursors=Cursors(), cursor=None, limit=3)
        if engine.dialect.name == "sqlite":
            assert isinstance(page, EncodedPage)
            assert len(msgspec.json.decode(page.data)) == 3
        else:
            assert isinstance(page, Page)
            assert len(page.rows) == 3


def test_rows_with_a_float_are_built_in_python() -> None:
    # SQLite writes a float with 15 significant digits; msgspec the shortest exact text.
    assert VALUE_ENTRY.sqlite_json() is None
    assert OBSERVATION.sqlite_json() is None
    assert COST_ENTRY.sqlite_json() is not None
    assert DELETION.sqlite_json() is not None


class Inner(msgspec.Struct):
    flag: bool | None
    day: date | None


class Outer(msgspec.Struct):
    n: int | None
    text: str | None
    inner: Inner


class Renamed(msgspec.Struct, rename="camel"):
    some_field: int


class Sparse(msgspec.Struct, omit_defaults=True):
    n: int = 0


def _outer(n: object, text: object, flag: object, day: object) -> Shape[Outer]:
    return Shape(
        Outer,
        literal(n, Integer()),
        literal(text, String()),
        Shape(Inner, literal(flag, Boolean()), literal(day, Date())),
    )


@settings(max_examples=200, deadline=None)
@given(
    n=st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1),
    text=st.none() | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0")),
    flag=st.none() | st.booleans(),
    day=st.none() | st.dates(),
)
def test_sqlite_writes_what_msgspec_writes(
    n: int | None, text: str | None, flag: bool | None, day: date | None
) -> None:
    shape = _outer(n, text, flag, day)
    with MEMORY.connect() as conn:
        written, *columns = conn.execute(select(shape.sqlite_json(), *shape.columns)).one()
    # SQLAlchemy reads the columns back (0/1 as a boolean, the stored text as a date).
    (built,) = shape.builder()([columns])
    assert built == Outer(n, text, Inner(flag, day))
    assert written.encode() == msgspec.json.encode(built)


def test_a_field_sqlite_cannot_write_exactly_leaves_the_rows_to_python() -> None:
    assert _outer(1, "a", True, date(2026, 1, 1)).sqlite_json() is not None
    # A float, anywhere (nested too).
    assert Shape(Inner, literal(1.5, Float()), literal(None, Date())).sqlite_json() is None
    # A date stored in another form than the ISO text msgspec writes.
    other = sqlite.DATE(storage_format="%(day)02d/%(month)02d/%(year)04d")
    assert Shape(Inner, literal(True, Boolean()), literal(None, other)).sqlite_json() is None
    # Struct options that change what msgspec writes.
    assert Shape(Renamed, literal(1, Integer())).sqlite_json() is not None
    assert Shape(Sparse, literal(1, Integer())).sqlite_json() is None


def test_encoded_field_names_are_the_structs() -> None:
    with MEMORY.connect() as conn:
        text = conn.execute(select(Shape(Renamed, literal(7, Integer())).sqlite_json())).scalar()
    assert text == '{"someField":7}' == msgspec.json.encode(Renamed(7)).decode()


def test_a_sqlite_without_json_functions_serves_the_structs(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build of SQLite may leave its JSON functions out: pages are then built in Python.
    import airoi.listing

    _, acct, _ = _world(engine)
    assert airoi.listing.sqlite_writes_json()  # this process's SQLite has them
    monkeypatch.setattr(airoi.listing, "sqlite_writes_json", lambda: False)
    with engine.connect() as conn:
        page = COST_ENTRIES.served(conn, acct, cursors=Cursors(), cursor=None, limit=3)
    assert isinstance(page, Page)
    assert len(page.rows) == 3


def test_a_store_not_kept_in_utf8_is_not_served(tmp_path: Path) -> None:
    # A page's rows are read as the bytes SQLite keeps their JSON text in, which are UTF-8
    # in a store `airoi init` makes. One whose file was made UTF-16 before would be served as
    # bytes that are no JSON: it is refused at start, saying why and what to do.
    from airoi.app import StoreUnreadable, serving_schema_check

    made = {}
    for encoding in ("UTF-16le", "UTF-8"):
        path = tmp_path / f"{encoding}.db"
        with closing(sqlite3.connect(path)) as conn:
            conn.execute(f"PRAGMA encoding = '{encoding}'")
            conn.execute("CREATE TABLE made (x)")  # the encoding is the file's from now on
        url = f"sqlite:///{path}"
        engine = create_engine(url)
        upgrade(engine)
        made[encoding] = engine
    try:
        with pytest.raises(StoreUnreadable, match=r"UTF-16le; .*UTF-8.*\.dump"):
            serving_schema_check(made["UTF-16le"], Settings(database_url="sqlite://"))
        serving_schema_check(made["UTF-8"], Settings(database_url="sqlite://"))
    finally:
        for engine in made.values():
            engine.dispose()
