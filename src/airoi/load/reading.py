"""Reading a bundle: a parsed mapping, or a `.json` / `.json.gz` file streamed in bounded
memory, as (key, position, item) in file order, twice (validation, then writing).

A file is streamed with ijson (yajl2_c) in decimal mode, so no number is rounded while it
is read; numbers become floats only once accepted. A bundle is exactly one JSON object; a
repeated name, nesting past `MAX_NESTING` and trailing text are refused, each as one
problem line that quotes nothing of the file (it may hold secrets, SEMANTICS R15).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Final

import ijson  # type: ignore[import-untyped]

from airoi.load.texts import ReadPastAllowance, TextGuard

ProgressHook = Callable[[int, int], None]

PROGRESS_BYTES: Final = 1 << 20  # report file progress about every MiB
PROGRESS_RECORDS: Final = 1000  # or every thousand records of a parsed bundle


class Progress:
    def __init__(self, hook: ProgressHook | None, total: int, step: int) -> None:
        self.hook = hook
        self.total = total
        self.step = step
        self.done = 0
        self.reported = 0

    def advance(self, amount: int) -> None:
        self.done += amount
        if self.hook is not None and self.done - self.reported >= self.step:
            self.reported = self.done
            self.hook(min(self.done, self.total), self.total)

    def complete(self) -> None:
        self.done = self.total
        self.finish()

    def finish(self) -> None:
        if self.hook is not None and self.reported != self.done:
            self.reported = self.done
            self.hook(min(self.done, self.total), self.total)


class _CountingReader:
    """File wrapper reporting the bytes of the file read (compressed bytes for .gz)."""

    def __init__(self, raw: IO[bytes], progress: Progress) -> None:
        self.raw = raw
        self.progress = progress

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.progress.advance(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)


class BadSource(Exception):
    """A bundle that cannot be read at all; the message is the problem line."""


class Repeated:
    """A value whose objects gave a name more than once, with the dotted paths of those names.

    JSON leaves the meaning of a repeated name open (RFC 8259, 4); a bundle that
    has one is refused rather than read as whichever copy came last.
    """

    __slots__ = ("names", "value")

    def __init__(self, value: Any, names: list[str]) -> None:
        self.value = value
        self.names = names


# No field of a record nests anywhere near this; a file that does is hostile, and building
# it would exhaust the interpreter's stack (a traceback, not a problem line).
MAX_NESTING: Final = 64
# How much of the file one record (or the delete object) may be, as JSON text (after gzip):
# a record's largest fields fit (an integration's two lists of 1,000 names of 1,000
# characters, a 100,000-character note); a 30 MB `settings` object did too, and held about
# twelve times its size while it was read and checked. Counted in the bytes the parser reads,
# so with its read-ahead (64 KiB) at most.
MAX_RECORD_BYTES: Final = 4 << 20
MAX_DELETE_IDS: Final = 1_000_000  # counted exactly once read (checks)
MAX_DELETE_BYTES: Final = 16 << 20  # what a million ids written out take, and more
DELETE_TOO_LARGE: Final = (
    f"bundle: 'delete' holds more than {MAX_DELETE_IDS:,} ids; delete them over more than "
    "one bundle"
)


class _TooDeep(Exception):
    """Raised where the nesting passes MAX_NESTING; the record's label is added above."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        # Only the record's own field is named: a deeper name (a stored setting's) is not said.
        self.field = path.split(".", maxsplit=1)[0].split("[", maxsplit=1)[0]


def _deeper(path: str, depth: int) -> int:
    if depth >= MAX_NESTING:
        raise _TooDeep(path)
    return depth + 1


def _build_map(
    events: Iterator[tuple[str, Any]], repeated: list[str], path: str, depth: int = 1
) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    key = ""
    try:
        for event, value in events:
            if event == "map_key":
                key = value
                if key in obj:
                    repeated.append(path + key)
            elif event == "end_map":
                return obj
            elif event == "start_map":
                inner = _deeper(path + key, depth)
                obj[key] = _build_map(events, repeated, f"{path}{key}.", inner)
            elif event == "start_array":
                inner = _deeper(path + key, depth)
                obj[key] = _build_list(events, repeated, f"{path}{key}", inner)
            else:
                obj[key] = value
    except ReadPastAllowance as exc:
        if depth == 1 and exc.field is None:
            exc.field = key  # the record's field being read when it grew past its bound
        raise
    return obj  # pragma: no cover - the parser raises on truncated input


def _build_list(
    events: Iterator[tuple[str, Any]], repeated: list[str], path: str, depth: int = 1
) -> list[Any]:
    items: list[Any] = []
    for event, value in events:
        if event == "end_array":
            return items
        if event == "start_map":
            inner = _deeper(path, depth)
            items.append(_build_map(events, repeated, f"{path}[#{len(items)}].", inner))
        elif event == "start_array":
            inner = _deeper(path, depth)
            items.append(_build_list(events, repeated, f"{path}[#{len(items)}]", inner))
        else:
            items.append(value)
    return items  # pragma: no cover


def _build_value(
    event: str, events: Iterator[tuple[str, Any]], label: str, guard: TextGuard | None
) -> Any:
    """An object or array whose start event was just read; a Repeated if a name repeats.
    `label` names it in a problem (`cost_entries[#3]`); read from a file (`guard`), its size
    is bounded."""
    repeated: list[str] = []
    if guard is not None:
        guard.allow(MAX_DELETE_BYTES if label == "delete" else MAX_RECORD_BYTES)
    try:
        value: Any = (
            _build_map(events, repeated, "")
            if event == "start_map"
            else _build_list(events, repeated, "")
        )
    except ReadPastAllowance as exc:
        if label == "delete":
            raise BadSource(DELETE_TOO_LARGE) from None
        where = f"{label}.{exc.field}" if exc.field else label
        raise BadSource(
            f"bundle: {where} is too large: a record is at most {MAX_RECORD_BYTES >> 20} MiB "
            "of JSON text"
        ) from None
    except _TooDeep as exc:
        where = f"{label}.{exc.field}" if exc.field else label
        raise BadSource(f"bundle: {where} nests deeper than {MAX_NESTING} levels") from None
    finally:
        if guard is not None:
            guard.allow(None)
    return Repeated(value, repeated) if repeated else value


def _array_items(
    events: Iterator[tuple[str, Any]], key: str, guard: TextGuard | None
) -> Iterator[Any]:
    # One outer event an item: a nested one is read to its end by _build_value.
    for pos, (event, value) in enumerate(events):
        if event in ("start_map", "start_array"):
            yield _build_value(event, events, f"{key}[#{pos}]", guard)
        elif event == "end_array":
            return
        else:
            yield value


def _walk_events(
    events: Iterator[tuple[str, Any]], guard: TextGuard | None = None
) -> Iterator[tuple[str, int, Any]]:
    """(key, position, item) for every element of every top-level array, in file order.

    Each top-level key is announced first with position -2 (even an empty
    array's). A top-level value that is not an array comes whole, with
    position -1. One element is built at a time, so a million-entry array streams.
    The input is read to its end: a bundle is exactly one JSON object.
    """
    first = next(events, None)
    if first is None or first[0] != "start_map":
        raise BadSource("bundle: not a JSON object")
    key = ""
    for event, value in events:
        if event == "map_key":
            key = value
            yield key, -2, None
        elif event == "start_array":
            for pos, item in enumerate(_array_items(events, key, guard)):
                yield key, pos, item
        elif event == "start_map":
            yield key, -1, _build_value(event, events, key, guard)
        elif event == "end_map":
            break
        else:
            yield key, -1, value
    # Past the object only whitespace may follow; the parser refuses anything else
    # (a second document, trailing text), which would otherwise go unread.
    try:
        for _ in events:
            break
        else:
            return
    except ijson.JSONError:
        pass
    raise BadSource(
        "bundle: text follows the JSON object (a second document or trailing text); "
        "a bundle is exactly one JSON object"
    )


def _parser_error(exc: Exception) -> str:
    """What the parser says is wrong, without the excerpt of the file it quotes after it: that
    excerpt is the bundle's own text, secrets included (SEMANTICS R15)."""
    message = exc.args[0] if exc.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    lines = str(message).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


class Source:
    """A bundle to read twice: a parsed mapping, or a .json / .json.gz file."""

    def __init__(
        self, source: Mapping[str, Any] | str | os.PathLike[str], hook: ProgressHook | None
    ) -> None:
        self.mapping: Mapping[str, Any] | None = None
        self.path: str | None = None
        if isinstance(source, Mapping):
            self.mapping = source
            records = sum(len(v) for v in source.values() if isinstance(v, list | tuple))
            self.progress = Progress(hook, 2 * records, PROGRESS_RECORDS)
        else:
            self.path = os.fspath(source)
            try:
                size = os.path.getsize(self.path)
            except OSError as exc:
                raise BadSource(f"bundle: cannot read {self.path} ({exc.strerror})") from None
            self.progress = Progress(hook, 2 * size, PROGRESS_BYTES)

    def items(self, keys: Iterable[str] | None = None) -> Iterator[tuple[str, int, Any]]:
        """Stream (key, position, item); `keys` limits a mapping source to those keys."""
        if self.mapping is not None:
            yield from self._mapping_items(self.mapping, keys)
        else:
            yield from self._file_items()
        self.progress.finish()

    def big_items(self, keys: tuple[str, ...]) -> Iterator[tuple[str, int, Any]]:
        """Stream the items of these big keys again (pass 2).

        With one big key in a file, ijson's C pipeline builds the items (about
        twice as fast as building them here); otherwise the general walk.
        """
        if self.mapping is not None or len(keys) != 1:
            yield from self.items(keys)
            return
        key = keys[0]
        with self._open() as stream:
            for pos, item in enumerate(ijson.items(stream, f"{key}.item", use_float=False)):
                yield key, pos, item
        self.progress.finish()

    def _mapping_items(
        self, mapping: Mapping[str, Any], keys: Iterable[str] | None
    ) -> Iterator[tuple[str, int, Any]]:
        wanted = None if keys is None else frozenset(keys)
        for key, value in mapping.items():
            if wanted is not None and key not in wanted:
                continue
            yield key, -2, None
            if isinstance(value, list | tuple):
                for pos, item in enumerate(value):
                    yield key, pos, item
                    self.progress.advance(1)
            else:
                yield key, -1, value

    def _file_items(self) -> Iterator[tuple[str, int, Any]]:
        with self._open() as stream:
            yield from _walk_events(iter(ijson.basic_parse(stream, use_float=False)), stream)

    @contextlib.contextmanager
    def _open(self) -> Iterator[TextGuard]:
        """The file's JSON bytes (gunzipped when it starts with the gzip magic)."""
        assert self.path is not None
        try:
            with open(self.path, "rb") as raw:
                head = raw.read(2)
                raw.seek(0)
                counting = _CountingReader(raw, self.progress)
                if head == b"\x1f\x8b":
                    yield TextGuard(gzip.GzipFile(fileobj=counting, mode="rb"))
                else:
                    yield TextGuard(counting)
        except ijson.JSONError as exc:
            raise BadSource(f"bundle: not valid JSON ({_parser_error(exc)})") from None
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise BadSource(f"bundle: not a valid gzip file ({exc})") from None
        except OSError as exc:
            raise BadSource(f"bundle: cannot read {self.path} ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise BadSource(f"bundle: not valid JSON ({exc.reason})") from None
