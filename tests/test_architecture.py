"""docs/architecture.md is held to the tree: every package and top-level module of
src/airoi has its row, no row names one that is gone, and each imports only what its row
allows (so an arrow the map does not show, such as tools/ -> api/, fails here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "airoi"
MAP = ROOT / "docs" / "architecture.md"
# `| \`name\` | what lives there | \`a\`, \`b\` |` under the heading "Packages and modules".
ROW = re.compile(r"^\|\s*`([\w.]+)`\s*\|(.*)\|(.*)\|\s*$")


def units_in_tree() -> set[str]:
    packages = {p.name for p in SOURCE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in SOURCE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return packages | modules


def unit_of(path: Path) -> str:
    parts = path.relative_to(SOURCE).parts
    return parts[0] if len(parts) > 1 else path.stem


def imported_units(path: Path) -> set[str]:
    """The units of airoi a source file imports, lazily or not, TYPE_CHECKING included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "airoi":
                names = [f"airoi.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "airoi" and len(parts) > 1 and parts[1] != "__version__":
                found.add(parts[1])
    return found


def actual_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCE.rglob("*.py"):
        if "migrations" in path.parts:  # Alembic's scripts: the schema as it was
            continue
        unit = unit_of(path)
        if unit == "__main__":
            continue
        graph.setdefault(unit, set()).update(imported_units(path) - {unit})
    return graph


def parse_map(text: str) -> dict[str, set[str]]:
    section = text.split("## Packages and modules", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        name, _, may = match.groups()
        assert name not in rows, f"{name} has two rows"
        rows[name] = set(re.findall(r"`([\w.]+)`", may))
    return rows


@pytest.fixture(scope="module")
def allowed() -> dict[str, set[str]]:
    return parse_map(MAP.read_text(encoding="utf-8"))


def test_every_package_and_module_has_a_row(allowed: dict[str, set[str]]) -> None:
    tree = units_in_tree()
    assert sorted(tree - set(allowed)) == [], "in src/airoi but not in docs/architecture.md"
    assert sorted(set(allowed) - tree) == [], "in docs/architecture.md but not in src/airoi"


def test_each_imports_only_what_its_row_allows(allowed: dict[str, set[str]]) -> None:
    unknown = {name for may in allowed.values() for name in may} - units_in_tree()
    assert unknown == set(), "a row allows something that is not in the tree"
    beyond = {
        unit: sorted(imported - allowed.get(unit, set()))
        for unit, imported in actual_imports().items()
        if imported - allowed.get(unit, set())
    }
    assert beyond == {}, "imports the map does not allow (add the arrow to the map, or remove it)"


def test_the_interfaces_share_one_service_layer(allowed: dict[str, set[str]]) -> None:
    # Issue 47: the figures both interfaces serve live in reports/, which neither calls back.
    assert "api" not in allowed["tools"]
    assert "tools" not in allowed["api"]
    assert {"api", "tools", "app"}.isdisjoint(allowed["reports"])
    assert "reports" in allowed["api"] and "reports" in allowed["tools"]


def test_the_check_sees_an_arrow_the_map_does_not_show(tmp_path: Path) -> None:
    # The check itself: a module that imports the HTTP package is seen doing so.
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from airoi.api.roi import get_roi\n", encoding="utf-8")
    assert imported_units(module) == {"api"}
    rows = parse_map("## Packages and modules\n| `tools` | the tools | `reports` |\n")
    assert rows == {"tools": {"reports"}}
