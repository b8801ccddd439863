"""What an import refuses, one line per problem naming the file, the line and the column."""

from __future__ import annotations

from pathlib import Path
from typing import Final

MAX_PROBLEMS: Final = 200  # lines kept; the rest are counted


class ImportRefused(Exception):
    """The import is refused; nothing was written. `lines` names each problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def where(file: Path | str, place: str | None = None, column: str | None = None) -> str:
    """`bill.csv: line 7, column BilledCost` (place: `line 7`, `row 7`, `page 2`, ...)."""
    name = file.name if isinstance(file, Path) else file
    parts = [part for part in (place, f"column {column}" if column else None) if part]
    return f"{name}: {', '.join(parts)}" if parts else name


class Problems:
    """Problem lines gathered while files are read; an import with any writes nothing."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.more = 0

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_PROBLEMS:
            self.lines.append(line)
        else:
            self.more += 1

    def at(self, file: Path | str, place: str | None, column: str | None, message: str) -> None:
        self.add(f"{where(file, place, column)}: {message}")

    def __bool__(self) -> bool:
        return bool(self.lines)

    def error(self) -> ImportRefused:
        lines = list(self.lines)
        if self.more:
            lines.append(f"{self.more} more problems not listed")
        return ImportRefused(lines)

    def raise_if_any(self) -> None:
        if self.lines:
            raise self.error()
