"""Pages whose rows SQLite writes as JSON: the same bytes as the rows built and encoded in Python.

On SQLite a list whose Shape allows it (`Shape.sqlite_json`) serves each row as the text the
database writes, joined; elsewhere (and for rows with a float) the Structs are built and
msgspec encodes them. The body, and so its ETag, must not tell the two apart: a copy that
walked a list before keeps its rows and its If-None-Match (SEMANTICS R13, R36).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

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
from airoi.reports.cost_entries import COST_ENTRIES, COST_ENTRY, CostEntryList
from airoi.reports.decisions import DECISION, DECISIONS, DecisionList
from airoi.reports.deletions import DELETION, DELETIONS, DeletionList
from airoi.reports.initiatives import INITIATIVE, INITIATIVES, InitiativeList
from airoi.reports.integrations import INTEGRATION, INTEGRATIONS, IntegrationList
from airoi.reports.metrics import METRIC, METRICS, MetricList
from airoi.reports.observations import OBSERVATION, OBSERVATIONS, ObservationList
from airoi.reports.value_entries import VALUE_ENTRIES, VALUE_ENTRY, ValueEntryList
from airoi.rows import Shape
from airoi.settings import Settings
from tests.conftest import bearer
from tests.every_list import LISTS, every_list

Client = TestClient[Litestar]
MEMORY = create_engine("sqlite://")
# Each list, its response Struct, and the values its handler passes for the parameters asked
# (every row of /initiatives: samples included).
SERVED: dict[str, tuple[ShapedList[Any], type[msgspec.Struct], dict[str, Any]]] = {
    "initiatives": (INITIATIVES, InitiativeList, {"without_samples": None}),
    "cost_entries": (COST_ENTRIES, CostEntryList, {}),
    "value_entries": (VALUE_ENTRIES, ValueEntryList, {}),
    "metrics": (METRICS, MetricList, {}),
    "observations": (OBSERVATIONS, ObservationList, {}),
    "decisions": (DECISIONS, DecisionList, {}),
    "integrations": (INTEGRATIONS, IntegrationList, {}),
    "deletions": (DELETIONS, DeletionList, {}),
}


def _struct_body(engine: Engine, path: str, acct: int, cursor: str | None, limit: int) -> bytes:
    """The body of the rows built as Structs and encoded by msgspec (the path of every store
    but SQLite), on a connection of the test's own."""
    query, envelope, values = SERVED[path]
    with engine.connect() as conn:
        page = query.rows(conn, acct, cursors=Cursors(), cursor=cursor, limit=limit, **values)
        return msgspec.json.encode(envelope(data=list(page.rows), page=page.info))


@pytest.mark.parametrize("path", LISTS)
def test_each_page_is_the_bytes_of_the_rows_built_and_encoded(
    client: Client, engine: Engine, path: str
) -> None:
    world = every_list(engine)
    cursor = None
    pages = rows = 0
    while True:
        asked: dict[str, Any] = {"limit": 2, "cursor": cursor}
        if path == "initiatives":
            asked["include_sample"] = "true"
        response = client.get(
            f"/api/v1/{path}",
            params={k: v for k, v in asked.items() if v is not None},
            headers=bearer(world.token),
        )
        assert response.status_code == 200, response.text
        assert response.content == _struct_body(engine, path, world.account, cursor, 2)
        served = response.json()
        pages, rows = pages + 1, rows + len(served["data"])
        cursor = served["page"]["next_cursor"]
        if cursor is None:
            break
    # Every row walked, across both load stamps.
    assert rows == world.rows[path]
    assert pages == (rows + 1) // 2


def test_sqlite_serves_the_rows_it_wrote_and_other_stores_the_structs(
    engine: Engine, db_url: str
) -> None:
    acct = every_list(engine).account
    with engine.connect() as conn:
        page = COST_ENTRIES.served(conn, acct, cursors=Cursors(), cursor=None, limit=3)
        if engine.dialect.name == "sqlite":
            assert isinstance(page, EncodedPage)
            assert len(msgspec.json.decode(page.data)) == 3
        else:
            assert isinstance(page, Page)
            assert len(page.rows) == 3


def test_rows_with_a_float_or_a_list_are_built_in_python() -> None:
    # SQLite writes a float with 15 significant digits; msgspec the shortest exact text. A
    # JSON array is kept as the text it was written in, not the text msgspec writes.
    in_python: list[Shape[Any]] = [VALUE_ENTRY, OBSERVATION, INITIATIVE, DECISION, INTEGRATION]
    written: list[Shape[Any]] = [COST_ENTRY, DELETION, METRIC]
    assert [shape.sqlite_json() for shape in in_python] == [None] * len(in_python)
    assert all(shape.sqlite_json() is not None for shape in written)


def test_an_optional_person_is_written_as_msgspec_writes_it() -> None:
    # A nested Struct that may be null (SQLite's CASE passes json_object's JSON on as JSON).
    shape = Shape(
        Outer,
        literal(1, Integer()),
        literal("x", String()),
        Shape(Inner, literal(None, Boolean()), literal(None, Date()), optional=True),
    )
    with MEMORY.connect() as conn:
        written, *columns = conn.execute(select(shape.sqlite_json(), *shape.columns)).one()
    (built,) = shape.builder()([columns])
    assert built == Outer(1, "x", None)
    assert written.encode() == msgspec.json.encode(built) == b'{"n":1,"text":"x","inner":null}'


class Inner(msgspec.Struct):
    flag: bool | None
    day: date | None


class Outer(msgspec.Struct):
    n: int | None
    text: str | None
    inner: Inner | None


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

    acct = every_list(engine).account
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
