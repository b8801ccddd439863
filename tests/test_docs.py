"""The documentation cannot rot: every setting, command, option, route and tool is documented,
and the examples run.

What the code has is read from the code: the `AIROI_*` names in src/ (and each command's
environment variables), the commands and options of the typer app as click sees them, the
served app's route table and the tool endpoint's tool names. Each must be named in README.md
or docs/*.md; each command has a section `### airoi COMMAND` in docs/cli.md naming all of its
options.

Every `sh` and `python` block of README.md and docs/*.md runs against a demo server, in a
directory of its own, with `AIROI_BASE_URL` and `AIROI_TOKEN` set as the README tells a user to
set them. A block preceded by `<!-- not run: REASON -->` is left out (a placeholder token, a
PostgreSQL server of one's own, an install).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from airoi.app import create_app
from airoi.cli import app as cli_app
from airoi.db.engine import make_engine
from airoi.settings import Settings
from airoi.tools.server import create_mcp_server
from tests.servers import demo_served

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
CLI_DOC = ROOT / "docs" / "cli.md"
README_MAX_BYTES = 16_000
BENCH = ROOT / "bench"
BENCH_README = BENCH / "README.md"
# How to run each benchmark, what it compares and its latest figures; older runs live in git.
BENCH_README_MAX_LINES = 300
# `AIROI_*` words in src/ that are not settings: the demo's made-up warehouse user, role and
# warehouse names in its connection settings (demo.py, catalog/platforms.json).
NOT_SETTINGS = {"AIROI_SVC", "AIROI_READER", "AIROI_WH"}
SETTING = re.compile(r"\bAIROI_[A-Z0-9_]*[A-Z0-9]\b")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>[^-].*?)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
BLOCK_TIMEOUT_SECONDS = 180


def documentation() -> str:
    return "\n".join(path.read_text() for path in [README, *DOCS])


def named(name: str, text: str) -> bool:
    """`name` appears in `text` as a whole word (not inside a longer name)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


# --- what the code has -----------------------------------------------------------------


def settings_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        names |= set(SETTING.findall(path.read_text()))
    for options in cli_commands(typer.main.get_command(cli_app)).values():
        names |= {envvar for option in options for envvar in option.envvars}
    return names - NOT_SETTINGS


@dataclass(frozen=True)
class Option:
    long_names: tuple[str, ...]
    envvars: tuple[str, ...]


def cli_commands(group: Any, path: str = "airoi") -> dict[str, list[Option]]:
    """Every command of a click group (typer's), by its full name, with its options; the
    group itself included. Arguments are positional, named in each command's usage."""
    ctx = group.context_class(group, info_name=path)
    options: list[Option] = []
    for param in group.get_params(ctx):  # --help included
        if param.param_type_name != "option":
            continue
        longs = tuple(n for n in (*param.opts, *param.secondary_opts) if n.startswith("--"))
        envvar = param.envvar
        envvars = (envvar,) if isinstance(envvar, str) else tuple(envvar or ())
        options.append(Option(longs, envvars))
    found = {path: options}
    for name, command in (getattr(group, "commands", None) or {}).items():
        if not getattr(command, "hidden", False):
            found |= cli_commands(command, f"{path} {name}")
    return found


def cli_sections(text: str) -> dict[str, str]:
    """docs/cli.md's sections by the command their heading names (`### airoi token issue`)."""
    sections: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"###\s+(airoi(?: [a-z][\w-]*)*)\s*", line)
        if heading:
            current = heading.group(1)
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def missing_from_cli_doc(commands: dict[str, list[Option]], text: str) -> list[str]:
    sections = cli_sections(text)
    missing = []
    for command, options in commands.items():
        if command not in sections:
            missing.append(command)
            continue
        missing += [
            f"{command} {name}"
            for option in options
            for name in option.long_names
            if not named(name, sections[command])
        ]
    return missing


def runnable_benchmarks(folder: Path) -> list[str]:
    """The modules of `folder` run as `python -m bench.NAME`: those with a `main` or a
    `__main__` block (the helpers they import have neither)."""
    runnable = re.compile(r"^(?:def main\(|if __name__ == [\"']__main__[\"']:)", re.MULTILINE)
    return sorted(path.stem for path in folder.glob("*.py") if runnable.search(path.read_text()))


def undocumented_benchmarks(modules: list[str], text: str) -> list[str]:
    """The modules whose command, `python -m bench.NAME`, `text` does not give."""
    return [
        name
        for name in modules
        if not re.search(rf"python -m bench\.{re.escape(name)}(?![\w.])", text)
    ]


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered. Lines of fenced code blocks are not headings."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, repeat = slug, 0
        while anchor in anchors:
            repeat += 1
            anchor = f"{slug}-{repeat}"
        anchors.add(anchor)
    return anchors


def served_routes(tmp: Path) -> set[str]:
    app = create_app(Settings(database_url=f"sqlite:///{tmp / 'routes.db'}"))
    try:
        return {re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path) for route in app.routes}
    finally:
        app.state.engine.dispose()


def tool_names(tmp: Path) -> set[str]:
    settings = Settings(database_url=f"sqlite:///{tmp / 'tools.db'}")
    engine = make_engine(settings.database_url)
    try:
        tools = asyncio.run(create_mcp_server(engine, settings).list_tools())
    finally:
        engine.dispose()
    return {tool.name for tool in tools}


# --- everything is documented ----------------------------------------------------------


def test_the_readme_is_a_guide_not_a_history() -> None:
    assert len(README.read_bytes()) <= README_MAX_BYTES
    text = README.read_text()
    assert {"docs/api.md", "docs/client.md", "docs/operating.md", "bench/README.md"} <= set(
        re.findall(r"\]\(([^)#]+)", text)
    )
    assert "./scripts/demo" in text and "./scripts/test" in text
    # The package is not published: every install line installs from the clone.
    assert re.search(r"pip install '?airoi", text) is None
    installs = [line for line in text.splitlines() if line.startswith("pip install")]
    assert installs
    assert all(re.search(r"\s-e '?\.|\s'?\./", line) for line in installs), installs


def test_every_link_between_the_pages_leads_to_a_file() -> None:
    for page in [README, *DOCS]:
        for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / link).resolve().is_file(), f"{page.name}: {link}"


def test_every_link_to_a_heading_finds_it() -> None:
    assert heading_anchors("# A: b, `c`\n## A: b, `c`\n```sh\n# not a heading\n```\n") == {
        "a-b-c",
        "a-b-c-1",
    }
    links = 0
    for page in [README, *DOCS]:
        for link, anchor in re.findall(r"\]\(([^)#:]+\.md)#([^)]+)\)", page.read_text()):
            links += 1
            target = (page.parent / link).resolve()
            assert anchor in heading_anchors(target.read_text()), f"{page.name}: {link}#{anchor}"
    assert links >= 2  # the README's into bench/README.md, docs/client.md's into the README


def test_the_benchmarks_readme_is_short_and_runs_every_benchmark() -> None:
    text = BENCH_README.read_text()
    assert len(text.splitlines()) <= BENCH_README_MAX_LINES
    modules = runnable_benchmarks(BENCH)
    assert {"ceiling", "faults", "imports", "make_bundle", "pull"} <= set(modules)
    assert not {"__init__", "common", "floor_app", "unframed_app"} & set(modules)
    assert undocumented_benchmarks(modules, text) == []


def test_an_undocumented_benchmark_is_caught(tmp_path: Path) -> None:
    (tmp_path / "documented.py").write_text("def main() -> None:\n    pass\n")
    (tmp_path / "newcomer.py").write_text('if __name__ == "__main__":\n    pass\n')
    (tmp_path / "helper.py").write_text("def helper() -> None:\n    pass\n")
    modules = runnable_benchmarks(tmp_path)
    assert modules == ["documented", "newcomer"]
    text = "    python -m bench.documented [--x]\n\n`bench.newcomer`, `python -m bench.newcomers`\n"
    assert undocumented_benchmarks(modules, text) == ["newcomer"]
    assert undocumented_benchmarks(modules, text + "python -m bench.newcomer\n") == []


def test_every_setting_is_documented() -> None:
    settings = settings_read_by_the_code()
    # The ones Settings.from_env reads, and the client commands' own.
    assert {"AIROI_DATABASE_URL", "AIROI_SECRET_KEY", "AIROI_TOKEN", "AIROI_BASE_URL"} <= settings
    text = documentation()
    assert sorted(name for name in settings if not named(name, text)) == []


def test_every_command_and_option_is_documented() -> None:
    commands = cli_commands(typer.main.get_command(cli_app))
    assert {"airoi", "airoi pull", "airoi token issue"} <= set(commands)
    assert missing_from_cli_doc(commands, CLI_DOC.read_text()) == []
    # docs/cli.md documents no command that is not there.
    assert set(cli_sections(CLI_DOC.read_text())) <= set(commands)


def test_an_undocumented_option_is_caught() -> None:
    """The check itself: a command given an option docs/cli.md does not name is reported, and
    so is a command without a section."""
    app = typer.Typer(add_completion=False)

    @app.command()
    def pull(
        to: str = typer.Option(..., "--to"),
        frobnicate: bool = typer.Option(False, "--frobnicate/--no-frobnicate"),
    ) -> None:
        """Pull."""

    @app.command()
    def push() -> None:
        """Push."""

    commands = cli_commands(typer.main.get_command(app))
    doc = "### airoi\n\n`--help`\n\n### airoi pull\n\n`--to PATH` and `--help`\n"
    assert missing_from_cli_doc(commands, doc) == [
        "airoi pull --frobnicate",
        "airoi pull --no-frobnicate",
        "airoi push",
    ]
    documented = doc + "`--frobnicate` (`--no-frobnicate`)\n### airoi push\n--help\n"
    assert missing_from_cli_doc(commands, documented) == []


def test_every_route_is_documented(tmp_path: Path) -> None:
    routes = served_routes(tmp_path)
    assert {"/api/v1/roi", "/api/v1/initiatives/{id}", "/mcp", "/healthz"} <= routes
    text = documentation()
    undocumented = [
        route
        for route in sorted(routes)
        if not re.search(rf"(?<![\w/]){re.escape(route)}(?![\w/{{])", text)
    ]
    assert undocumented == []


def test_every_tool_is_documented(tmp_path: Path) -> None:
    tools = tool_names(tmp_path)
    assert {"get_roi_summary", "search"} <= tools
    text = documentation()
    assert sorted(tool for tool in tools if f"`{tool}`" not in text) == []


# --- the examples run ------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def code_blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start = index
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        marker = NOT_RUN.fullmatch(before.strip())
        yield Block(
            path,
            start + 1,
            fence.group("lang"),
            "\n".join(lines[start + 1 : end]) + "\n",
            marker.group("reason") if marker else None,
        )
        index = end + 1


ALL_BLOCKS = [block for path in [README, *DOCS] for block in code_blocks(path)]
RUN = [block for block in ALL_BLOCKS if block.lang in ("sh", "python") and not block.not_run]


def test_every_example_is_run_or_says_why_not() -> None:
    for block in ALL_BLOCKS:
        assert block.lang in ("sh", "python"), f"{block.name}: a fence without sh or python"
    readme = [block for block in RUN if block.path == README]
    assert {block.lang for block in readme} == {"sh", "python"}
    assert len(readme) >= 4  # the requests, the client, pull and verify, dlt
    # A marker that does not stand right before a block would leave nothing out.
    text = documentation()
    assert len(NOT_RUN.findall(text)) == sum(block.not_run is not None for block in ALL_BLOCKS)


@dataclass(frozen=True)
class Demo:
    base_url: str
    token: str
    database_url: str  # the demo's store, which the import examples write to


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`airoi demo` into a fresh store, then `airoi serve` on a free port, as a user runs it."""
    with demo_served(tmp_path_factory.mktemp("demo")) as served:
        yield Demo(f"{served.origin}/api/v1", served.token, served.database_url)


def _figures(prefix: str) -> Callable[[str], None]:
    """Lines starting with `prefix` print one figure each, worked out two ways: equal, above 0."""

    def check(stdout: str) -> None:
        figures = [
            int(line.rsplit(maxsplit=1)[-1])
            for line in stdout.splitlines()
            if line.startswith(prefix)
        ]
        assert len(figures) == 2 and figures[0] == figures[1] > 0, stdout

    return check


def _loaded(stdout: str) -> None:
    assert "contains no failed jobs" in stdout, stdout


# What a block that holds the key prints is checked, beyond its exit status.
OUTPUT_CHECKS: dict[str, Callable[[str], None]] = {
    "approved value from": _figures("approved value from"),
    "pipeline.run(": _loaded,
}


@pytest.mark.parametrize("block", RUN, ids=[block.name for block in RUN])
def test_the_example_runs(block: Block, demo: Demo, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIROI_BASE_URL": demo.base_url,
        "AIROI_TOKEN": demo.token,
        "DLT_DATA_DIR": str(tmp_path / "dlt"),  # dlt keeps its pipelines' state here
    }
    # docs/importing.md's examples write to the demo's store, as a user's would, reading
    # the files of examples/ from the repository's root.
    env["AIROI_DATABASE_URL"] = demo.database_url
    command = (
        ["bash", "-euo", "pipefail", "-c", block.code]
        if block.lang == "sh"
        else [sys.executable, "-c", block.code]
    )
    done = subprocess.run(
        command,
        check=False,
        cwd=ROOT if "examples/" in block.code else tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert demo.token not in done.stderr  # nothing the examples run prints the token
    for key, check in OUTPUT_CHECKS.items():
        if key in block.code:
            check(done.stdout)
