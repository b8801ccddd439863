"""The bundle's JSON text on its way to the parser (airoi.load.texts): strings past the cap cut,
lone surrogate escapes marked, everything else passed through byte for byte, wherever a read
happens to end."""

from __future__ import annotations

import gzip
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from airoi.load import BundleError, load_bundle, texts
from airoi.load.texts import TextGuard
from tests.load.bundles import base_bundle


class Chunks:
    """A reader whose reads end wherever the sizes say, whatever size is asked."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.at = data, sizes or [1], 0

    def read(self, size: int = -1) -> bytes:
        step = self.sizes[self.at % len(self.sizes)] if self.at < len(self.data) else 0
        piece = self.data[self.at : self.at + max(step, 1)]
        self.at += len(piece)
        return piece


def through(data: bytes, sizes: list[int]) -> bytes:
    guard = TextGuard(Chunks(data, sizes))
    out = []
    while piece := guard.read(7):
        out.append(piece)
    return b"".join(out)


texts_st = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\uffff"),
    max_size=30,
)
documents = st.recursive(
    st.none() | st.booleans() | st.integers() | texts_st,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts_st, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(documents, st.booleans(), st.lists(st.integers(1, 13), min_size=1, max_size=5))
def test_a_document_within_the_caps_passes_byte_for_byte(
    document: Any, ascii_only: bool, sizes: list[int]
) -> None:
    data = json.dumps(document, ensure_ascii=ascii_only).encode()
    assert through(data, sizes) == data


@pytest.mark.parametrize("sizes", [[1], [2], [5], [6], [7], [11], [12], [13], [4096]])
def test_lone_surrogates_are_marked_and_pairs_kept(sizes: list[int]) -> None:
    data = (
        b'{"a": "A\\ud800B", "b": "\\udc00", "c": "\\ud83d\\ude00", "d": "\\\\ud800", '
        b'"e": "\\uD800\\u0041", "f": "\\ud800"}'
    )
    parsed = json.loads(through(data, sizes))
    assert parsed == {
        "a": "A\uffffB",
        "b": "\uffff",
        "c": "\U0001f600",
        "d": "\\ud800",  # an escaped backslash, then text: no escape at all
        "e": "\uffffA",
        "f": "\uffff",
    }


@pytest.mark.parametrize("sizes", [[1], [3], [10], [4096]])
def test_a_string_past_the_cap_is_cut_and_the_rest_read_on(
    monkeypatch: pytest.MonkeyPatch, sizes: list[int]
) -> None:
    monkeypatch.setattr(texts, "MAX_STRING_BYTES", 10)
    document = {
        "long": "0123456789" + 'ABC"DEF\\GHI\u00e9' * 50,
        "short": "fits",
        "accent": "012345678\u00e9\u00e9\u00e9",  # a 2-byte character across the cut
        "number": 7,
    }
    for ascii_only in (True, False):
        data = json.dumps(document, ensure_ascii=ascii_only).encode()
        parsed = json.loads(through(data, sizes))
        assert parsed["long"].startswith("0123456789")
        assert len(parsed["long"].encode()) <= 10 + 6  # the cut, and at most one escape
        assert (parsed["short"], parsed["number"]) == ("fits", 7)
        assert parsed["accent"].startswith("012345678")


# --------------------------------------------------------------------------- through a load


def bundle_with(**initiative: Any) -> dict[str, Any]:
    return {
        "accounts": [{"id": 1, "name": "Acme"}],
        "initiatives": [{"id": 5, "account_id": 1, "title": "Bot", "stage": "live", **initiative}],
    }


def test_a_lone_surrogate_in_a_file_is_refused_naming_the_field(
    engine: Engine, tmp_path: Path
) -> None:
    # It used to be stored as "A?B" (SQLite) or to end the load as invalid UTF-8.
    path = tmp_path / "bundle.json"
    text = json.dumps(bundle_with(description="A"))
    text = text.replace('"description": "A"', '"description": "A\\ud800B"')
    bundle = json.loads(json.dumps(bundle_with()))
    bundle["integrations"] = [
        {
            "id": 4,
            "account_id": 1,
            "platform": "openai",
            "status": "active",
            "settings": {"nested": [{"deep": "PLACEHOLDER"}]},
        }
    ]
    text = json.dumps({**json.loads(text), "integrations": bundle["integrations"]})
    path.write_text(text.replace("PLACEHOLDER", "x\\udc00y"))
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert sorted(caught.value.problems) == [
        "initiatives[id=5].description: holds a lone surrogate (a \\ud800 to \\udfff escape "
        "without its pair) or U+FFFF, which no text holds",
        "integrations[id=4].settings: holds a lone surrogate (a \\ud800 to \\udfff escape "
        "without its pair) or U+FFFF, which no text holds",
    ]


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_huge_string_is_refused_in_one_read_naming_the_field(
    engine: Engine, tmp_path: Path, gzipped: bool
) -> None:
    # A 64 MiB description: refused as too long, by name, without the parser ever holding it.
    huge = "x" * (64 << 20)
    data = json.dumps(bundle_with(description=huge)).encode()
    path = tmp_path / ("bundle.json.gz" if gzipped else "bundle.json")
    path.write_bytes(gzip.compress(data, 1) if gzipped else data)
    started = time.perf_counter()
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert caught.value.problems == [
        "initiatives[id=5].description: longer than 100,000 characters"
    ]
    # Linear: twice through 64 MiB at memory speed; the parser saw at most the cut.
    assert time.perf_counter() - started < 60


def test_text_fields_take_up_to_100000_characters(engine: Engine) -> None:
    load_bundle(engine, bundle_with(description="d" * 100_000))
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle_with(description="d" * 100_001))
    assert caught.value.problems == [
        "initiatives[id=5].description: longer than 100,000 characters"
    ]


def test_random_reads_of_a_real_bundle_change_nothing(tmp_path: Path) -> None:
    data = json.dumps(base_bundle(), ensure_ascii=False).encode()
    rng = random.Random(7)
    for _ in range(50):
        sizes = [rng.randint(1, 40) for _ in range(5)]
        assert through(data, sizes) == data
    assert through(io.BytesIO(data).read(), [65536]) == data


def test_a_long_unknown_name_is_cut_in_its_problem_line(engine: Engine) -> None:
    name = "n" * 5_000
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, {**bundle_with(**{name: 1}), "k" * 5_000: []})
    assert sorted(caught.value.problems) == [
        f"bundle: unknown key '{'k' * 57}...'",
        f"initiatives[id=5].{'n' * 57}...: unknown field",
    ]


def test_a_flood_of_problems_says_where_it_stopped_counting(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airoi.load import records

    monkeypatch.setattr(records, "MAX_COUNTED", 50)
    bundle = {"accounts": [{"id": n, "nam": "x"} for n in range(1, 2_000)]}
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle)
    assert len(caught.value.problems) == 1_001
    assert caught.value.problems[-1] == (
        "bundle: 50 or more problems not listed (counting stopped there)"
    )


@pytest.mark.parametrize("sizes", [[1], [3], [7], [64], [4096], [65536]])
def test_a_run_of_digits_past_the_cap_is_cut_between_strings_only(sizes: list[int]) -> None:
    cap = texts.MAX_NUMBER_DIGITS
    long, kept = "9" * 5_000, "9" * cap
    text = f'[{long}, -{long}.5, 1e{long}, "{long}", {"1" * cap}, 12]'
    assert json.loads(through(text.encode(), sizes)) == [
        int(kept),
        -float(kept + ".5"),
        float("inf"),  # 1e followed by 100 nines: json reads it as a float
        long,  # a string's digits are its text, never cut
        int("1" * cap),  # at the cap: as it came
        12,
    ]


@pytest.mark.parametrize("digits", [5_000, 100_000, 3_000_000])
def test_a_number_of_thousands_of_digits_is_refused_naming_the_field(
    engine: Engine, tmp_path: Path, digits: int
) -> None:
    # It crashed the parser: a traceback at 4,301 digits, a segmentation fault at 100,000.
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(bundle_with(title="Bot")).replace('"id": 5', '"id": ' + "7" * digits)
    )
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    (problem,) = caught.value.problems
    assert problem.startswith("initiatives[#0].id: " + "7" * texts.MAX_NUMBER_DIGITS + " is not")
    assert len(problem) < 300
