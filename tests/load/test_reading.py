"""A bundle read from a file or a mapping (airoi.load.reading): exactly one JSON object,
plain or gzipped, each record and the deletes bounded, progress reported, a large file
streamed, and a broken file refused by one line that quotes nothing of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from airoi.db import tables
from airoi.load import BundleError, load_bundle
from tests.load.bundles import (
    BASE_COUNTS,
    LATER,
    NOW,
    SECRET,
    Bundle,
    base_bundle,
    loaded,
    one,
    refused,
)


def test_a_file_that_is_not_json_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"accounts": [{"id": 1,, }]}')
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("bundle: not valid JSON (")
    path.write_text("[1, 2]")
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert caught.value.problems == ["bundle: not a JSON object"]
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, tmp_path / "missing.json")
    assert caught.value.problems[0].startswith("bundle: cannot read ")


ONE_OBJECT = (
    "bundle: text follows the JSON object (a second document or trailing text); "
    "a bundle is exactly one JSON object"
)
ACME_2 = '{"accounts": [{"id": 3, "name": "Initech"}]'
VENDOR_A = '{"id": 8, "account_id": 3, "name": "Initrode"}'
VENDOR_B = '{"id": 9, "account_id": 3, "name": "Initrode Two"}'


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ACME_2 + '}{"vendors": [' + VENDOR_A + "]}", ONE_OBJECT),
        (ACME_2 + "} trailing", ONE_OBJECT),
        (ACME_2 + "}\n[]\n", ONE_OBJECT),
        (
            ACME_2 + ', "vendors": [' + VENDOR_A + '], "vendors": [' + VENDOR_B + "]}",
            "bundle: the key 'vendors' is given more than once",
        ),
    ],
    ids=["two-documents", "trailing-text", "trailing-array", "repeated-key"],
)
def test_a_file_is_exactly_one_json_object(
    engine: Engine, tmp_path: Path, name: str, text: str, expected: str
) -> None:
    loaded(engine)
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert refused(engine, path) == [expected]
    # Whitespace after the object is not more text.
    whole = ACME_2 + ', "vendors": [' + VENDOR_A + "]}\n \n"
    path.write_bytes(gzip.compress(whole.encode()) if name.endswith(".gz") else whole.encode())
    assert load_bundle(engine, path, now=LATER).inserted["vendors"] == 1


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_byte_order_mark_before_the_object_is_read_past(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    # RFC 8259 8.1: a parser may ignore a UTF-8 byte order mark; Windows tools write one.
    # It was "bundle: not valid JSON (lexical error: invalid char in json text.)".
    path = tmp_path / name
    text = b"\xef\xbb\xbf" + (ACME_2 + ', "vendors": [' + VENDOR_A + "]}").encode()
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    report = load_bundle(engine, path, now=LATER)
    assert (report.inserted["accounts"], report.inserted["vendors"]) == (1, 1)
    # Only before the object: one inside a string is kept as the text it is.
    path.write_bytes(b'{"accounts": [{"id": 3, "name": "\xef\xbb\xbfInitech"}]}')
    load_bundle(engine, path, now=LATER)
    assert one(engine, tables.accounts, id=3)["name"] == "\ufeffInitech"


def test_a_name_given_twice_in_a_record_is_refused(engine: Engine, tmp_path: Path) -> None:
    loaded(engine)
    path = tmp_path / "repeated.json"
    path.write_text(
        '{"vendors": [{"id": 1, "account_id": 1, "name": "OpenAI", "name": "Other"}],'
        ' "cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1,'
        ' "source": {"type": "csv", "type": "api"}}],'
        ' "integrations": [{"id": 4, "account_id": 1, "platform": "openai", "status": "active",'
        ' "credentials": {"api_key": "sk-a", "api_key": "sk-b"}}],'
        ' "delete": {"initiatives": [404], "initiatives": [7]}}'
    )
    assert sorted(refused(engine, path)) == [
        "cost_entries[id=17].source.type: given more than once",
        "delete.initiatives: given more than once",
        # A name inside credentials is not said, as its value is not (SEMANTICS R15).
        "integrations[id=4].credentials: a name inside it is given more than once",
        "vendors[id=1].name: given more than once",
    ]


def test_a_record_or_delete_past_its_size_is_one_problem(engine: Engine, tmp_path: Path) -> None:
    # A 30 MB `settings` object was built whole and kept (a 45 MB row, the load's memory
    # about twelve times the file). A record is read up to 4 MiB of JSON text (and the
    # parser's read-ahead, 64 KiB); 'delete' up to 1,000,000 ids.
    loaded(engine)
    path = tmp_path / "large.json"
    integration = base_bundle()["integrations"][0]
    largest = {"id": 4, "account_id": 1, "platform": "openai", "status": "active"}
    for field in ("primary_source_categories", "metric_categories"):
        largest[field] = [f"{n:04d}" + "c" * 996 for n in range(1_000)]  # each list's most
    path.write_text(json.dumps({"integrations": [largest]}))
    assert load_bundle(engine, path, now=LATER).updated["integrations"] == 1
    too_large = (
        "bundle: integrations[#0].settings is too large: a record is at most 4 MiB of JSON text"
    )
    texts = {f"k{n}": "x" * 100_000 for n in range(43)}  # 4.3 MB
    many = {"list": [1] * 2_200_000}  # 4.4 MB: two bytes a value
    for settings in (texts, many):
        path.write_text(compact({"integrations": [{**integration, "settings": settings}]}))
        assert refused(engine, path) == [too_large]
    # The same in a .json.gz: what counts is the JSON text, not the compressed bytes.
    path = tmp_path / "large.json.gz"
    path.write_bytes(
        gzip.compress(compact({"integrations": [{**integration, "settings": many}]}).encode())
    )
    assert refused(engine, path) == [too_large]
    fewer = {"list": [1] * 1_900_000}  # 3.8 MB
    path.write_bytes(
        gzip.compress(compact({"integrations": [{**integration, "settings": fewer}]}).encode())
    )
    assert load_bundle(engine, path, now=LATER).updated["integrations"] == 1
    too_many = (
        "bundle: 'delete' holds more than 1,000,000 ids; delete them over more than one bundle"
    )
    path = tmp_path / "delete.json"
    for ids in (
        {"cost_entries": list(range(1, 1_000_002))},  # counted once read
        {"cost_entries": [1] * 6_000_000, "value_entries": [1] * 6_000_000},  # while read
    ):
        path.write_text(compact({"delete": ids}))
        assert refused(engine, path) == [too_many]


def compact(bundle: Bundle) -> str:
    return json.dumps(bundle, separators=(",", ":"))


@pytest.mark.parametrize(
    ("field", "opening", "closing", "shallower"),
    [
        ("notes", '{"k":', "}", "an object is not a string"),
        ("tags", "[", "]", "unknown field"),
    ],
)
def test_a_value_nested_past_any_record_is_one_problem(
    engine: Engine, tmp_path: Path, field: str, opening: str, closing: str, shallower: str
) -> None:
    # 5,000 levels used to exhaust the stack: a RecursionError traceback, not a problem line.
    loaded(engine)
    deep = opening * 5_000 + "1" + closing * 5_000
    path = tmp_path / "deep.json"
    path.write_text(
        '{"cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1},'
        ' {"id": 19, "initiative_id": 5, "amount_cents": 1, "' + field + '": ' + deep + "}]}"
    )
    assert refused(engine, path) == [
        f"bundle: cost_entries[#1].{field} nests deeper than 64 levels"
    ]
    # 63 levels below the record's field are read (and the field refused for what it holds).
    path.write_text(
        '{"cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1, "'
        + field
        + '": '
        + opening * 63
        + "1"
        + closing * 63
        + "}]}"
    )
    assert refused(engine, path) == [f"cost_entries[id=17].{field}: {shallower}"]


def test_a_gzip_file_is_read_to_its_end(engine: Engine, tmp_path: Path) -> None:
    loaded(engine)
    packed = gzip.compress((ACME_2 + "}").encode())
    path = tmp_path / "bundle.json.gz"
    path.write_bytes(packed[:-4])  # the JSON is whole, the gzip stream is not
    problems = refused(engine, path)
    assert len(problems) == 1 and problems[0].startswith("bundle: not a valid gzip file ("), (
        problems
    )
    path.write_bytes(packed + b"trailing")
    problems = refused(engine, path)
    assert len(problems) == 1 and problems[0].startswith("bundle: not a valid gzip file ("), (
        problems
    )


def _write(path: Path, bundle: Bundle) -> Path:
    text = json.dumps(bundle)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_file_loads_like_the_dict(engine: Engine, tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / name, base_bundle())
    calls: list[tuple[int, int]] = []
    report = load_bundle(engine, str(path), now=NOW, progress=lambda d, t: calls.append((d, t)))
    assert {k: v for k, v in report.inserted.items() if v} == BASE_COUNTS
    assert calls[-1][0] == calls[-1][1] == 2 * path.stat().st_size
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    # What the file wrote is exactly what the dict describes.
    assert loaded(engine, now=LATER).totals()["unchanged"] == 21


def test_a_dict_reports_progress_in_records(engine: Engine) -> None:
    calls: list[tuple[int, int]] = []
    load_bundle(engine, base_bundle(), now=NOW, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (42, 42)  # 21 records, read twice


@pytest.mark.parametrize("kinds", [("cost_entries",), ("cost_entries", "value_entries")])
def test_a_large_file_streams_in_batches(
    engine: Engine, tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    bundle = base_bundle()
    bundle["cost_entries"] = [
        {
            "id": 1000 + n,
            "initiative_id": 5,
            "amount_cents": n,
            "currency": "EUR",
            "vendor_name": f"Vendor {n % 3}",
            "period_start": "2026-02-01",
        }
        for n in range(2_500)
    ]
    bundle["value_entries"] = [
        {"id": 5000 + n, "initiative_id": 5, "amount_cents": n, "status": "approved"}
        for n in range(1_200)
    ]
    for big in ("value_entries", "observations"):
        if big not in kinds:
            del bundle[big]  # one big key: the file is streamed again by ijson's C pipeline
    path = _write(tmp_path / "large.json.gz", bundle)
    report = load_bundle(engine, path, now=NOW)
    assert report.inserted["cost_entries"] == 2_500
    assert report.inserted["vendors"] == 3 + 3
    again = load_bundle(engine, path, now=LATER)
    assert again.unchanged["cost_entries"] == 2_500
    assert again.totals()["inserted"] == again.totals()["updated"] == 0
    bundle["cost_entries"][1_700]["amount_cents"] = -1
    bundle["cost_entries"][2_100]["currency"] = "GBP"
    bundle["cost_entries"][2_200]["initiative_id"] = 7
    problems = refused(engine, _write(tmp_path / "refused.json", bundle))
    assert sorted(problems) == [
        "cost_entries[id=3100].currency: no FX rate for GBP in account 1",
        "cost_entries[id=3200].initiative_id: initiative 7 is in account 2, but id 3200 "
        "belongs to account 1: a row never moves to another account",
    ]


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_bad_byte_is_refused_without_quoting_the_file(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    # SEMANTICS R15: the parser quotes the text around a bad byte; that text is the bundle's,
    # credentials and e-mail addresses included, and is never printed.
    text = json.dumps(base_bundle()).encode()
    for secret in (b'"sk-test"', b'"ada@acme.example"', SECRET.encode()):
        at = text.index(secret) + len(secret) - 1
        broken = text[:at] + b"\xff" + text[at:]
        path = tmp_path / name
        path.write_bytes(gzip.compress(broken) if name.endswith(".gz") else broken)
        problems = refused(engine, path)
        assert problems == ["bundle: not valid JSON (lexical error: invalid bytes in UTF8 string.)"]
