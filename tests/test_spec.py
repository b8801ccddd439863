"""The contract in the repository: docs/spec/ holds SPEC, SEMANTICS, BUNDLE and IMPORT as
../shared/spec has them (where that exists, beside the checkout), and the code and tests cite
no rule or section that the contract does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPY = ROOT / "docs" / "spec"
SHARED = ROOT.parent / "shared" / "spec"
NAMES = ("SPEC.md", "SEMANTICS.md", "BUNDLE.md", "IMPORT.md")
# Every Python file but this one, whose own test cites what the contract lacks on purpose.
SOURCES = [
    path
    for top in ("src", "tests", "bench")
    for path in (ROOT / top).rglob("*.py")
    if path != Path(__file__).resolve()
]
RULE_CITED = re.compile(r"\bR([0-9]{1,3})\b")
SECTION_CITED = re.compile(r"\bSPEC ([0-9]+(?:\.[0-9A-Z]+)*)")


def rules_defined() -> set[int]:
    text = (COPY / "SEMANTICS.md").read_text(encoding="utf-8")
    return {int(number) for number in re.findall(r"^- \*\*R([0-9]+) ", text, re.MULTILINE)}


def sections_defined() -> set[str]:
    """SPEC's headings (`## 4.A.1 ...`), and the numbered items of a top section (`5.2`)."""
    found: set[str] = set()
    top: str | None = None
    for line in (COPY / "SPEC.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#+ ([0-9]+(?:\.[0-9A-Z]+)*)\.? ", line)
        if heading:
            found.add(heading.group(1))
            top = heading.group(1) if "." not in heading.group(1) else None
            continue
        item = re.match(r"^([0-9]+)\. ", line)
        if item and top is not None:
            found.add(f"{top}.{item.group(1)}")
    return found


def cited(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Each citation and the files that make it."""
    where: dict[str, list[str]] = {}
    for path in SOURCES:
        for match in pattern.finditer(path.read_text(encoding="utf-8")):
            where.setdefault(match.group(1), []).append(str(path.relative_to(ROOT)))
    return where


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/spec beside this checkout")
@pytest.mark.parametrize("name", NAMES)
def test_the_copy_is_the_contract(name: str) -> None:
    assert (COPY / name).read_bytes() == (SHARED / name).read_bytes(), (
        f"docs/spec/{name} differs from ../shared/spec/{name}: copy the new contract in"
    )


def test_the_copy_is_whole() -> None:
    assert sorted(path.name for path in COPY.glob("*.md")) == sorted(NAMES)
    assert rules_defined() >= set(range(1, 47))


def test_every_rule_cited_is_in_semantics() -> None:
    defined = rules_defined()
    unknown = {f"R{n}": files for n, files in cited(RULE_CITED).items() if int(n) not in defined}
    assert unknown == {}


def test_every_spec_section_cited_is_in_spec() -> None:
    defined = sections_defined()
    assert {"4.A.1", "2.10", "5.2", "7"} <= defined
    unknown = {section: files for section, files in cited(SECTION_CITED).items()
               if section not in defined}  # fmt: skip
    assert unknown == {}


def test_the_checks_catch_what_they_look_for() -> None:
    assert RULE_CITED.findall("SEMANTICS R99, and (R5)") == ["99", "5"]
    assert 99 not in rules_defined()
    assert SECTION_CITED.findall("as SPEC 4.A.13 says") == ["4.A.13"]
    assert "4.A.13" not in sections_defined()
