"""The bundle's JSON text checked on its way to the parser, in linear time and bounded memory.

Two things the parser cannot be trusted with:

- A string of any length: the parser holds a whole string before it hands it over, so a
  700 MiB string held 700 MiB, and took minutes. A string whose text passes `MAX_STRING_BYTES`
  is cut there (at a character's start, never inside an escape) and the rest of it is
  skipped, so the field's own check then refuses it as too long, naming the record and the
  field, after reading it once and holding at most the cut.
- A lone surrogate escape (`\\ud800` without its pair): the parser turns it into `?` (or
  into bytes that are not UTF-8). Each is written as `\\uffff` instead, a noncharacter no
  text field takes, so the field's own check refuses it, naming the record and the field.

And one thing between strings: a number's run of digits. The parser turns a run of more
than 4,300 digits into a crash (the interpreter refuses the integer, and the C parser fails
on the refusal, at 100,000 digits with a segmentation fault). A run past
`MAX_NUMBER_DIGITS` is cut there: no field takes a number of even that many digits, so the
field's own check refuses what is left, naming the record and the field.

Only bytes inside strings and digits between them are touched; a chunk with no backslash,
no string past the cap and no long run of digits passes through as it came.
"""

from __future__ import annotations

import re
from typing import Final, Protocol

# The longest string text handed to the parser: more than any field takes once decoded
# (100,000 characters, 6 bytes each when written as \u escapes).
MAX_STRING_BYTES: Final = 1_000_000
# The most digits of one run handed to the parser: far more than any number a field takes
# (an id or an amount has at most 19), far fewer than the interpreter converts (4,300).
MAX_NUMBER_DIGITS: Final = 100
# A noncharacter standing for a lone surrogate (U+FFFF; see airoi.load.values.check_text).
LONE_SURROGATE: Final = b"\\uffff"
_BOM: Final = b"\xef\xbb\xbf"  # what some editors and shells write before UTF-8 text
_SPECIAL = re.compile(rb'["\\]')
_DIGITS: Final = b"0123456789"
_DIGIT_RUN = re.compile(rb"[0-9]+")
# Digits as "0", every other byte as "x": a run too long is then a substring search, several
# times faster than a pattern over a chunk that has none.
_AS_RUNS: Final = bytes(48 if 48 <= b <= 57 else 120 for b in range(256))
_TOO_LONG: Final = b"0" * (MAX_NUMBER_DIGITS + 1)
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _surrogate(escape: bytes) -> str | None:
    """ "high", "low" or None for a complete `\\uXXXX` escape."""
    if len(escape) != 6 or escape[2:3] not in (b"d", b"D"):
        return None
    third = escape[3:4].lower()
    if third in (b"8", b"9", b"a", b"b"):
        return "high"
    if third in (b"c", b"d", b"e", b"f"):
        return "low"
    return None


def _run_after(before: int, text: bytes) -> int:
    """The digits of the run `text` ends in, `before` counted when all of `text` is digits."""
    trailing = len(text) - len(text.rstrip(_DIGITS))
    return before + trailing if trailing == len(text) else trailing


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class ReadPastAllowance(Exception):
    """More bytes were asked for than TextGuard.allow let through; `field` is set by whoever
    knows which field was being read."""

    field: str | None = None


class TextGuard:
    """A file-like reader of JSON bytes, as `raw` gives them, with strings checked; and,
    once told to (`allow`), refusing to hand out more than so many bytes from there on."""

    def __init__(self, raw: Readable) -> None:
        self.raw = raw
        self.carry = b""  # the tail of the last read, held back until it can be judged
        self.in_string = False
        self.length = 0  # bytes of the current string's text so far
        self.skipping = False  # past the cap: the string's text is dropped up to its end
        self.digits = 0  # digits read of the number the last read ended in, between strings
        self.done = False
        self.first = True  # a UTF-8 byte order mark before the text is dropped (RFC 8259 8.1)
        self.handed = 0  # bytes handed out so far
        self.until: int | None = None  # past this many handed out, ReadPastAllowance

    def allow(self, size: int | None) -> None:
        """From here on, raise ReadPastAllowance once more than `size` more bytes are asked
        for (the parser reads ahead: up to one read more); None: no bound."""
        self.until = None if size is None else self.handed + size

    def _hand(self, out: bytes) -> bytes:
        self.handed += len(out)
        if self.until is not None and self.handed > self.until:
            raise ReadPastAllowance
        return out

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # a reader's way to ask what it reads (bytes)
            return b""
        while True:
            data = b"" if self.done else self.raw.read(size if size and size > 0 else 65536)
            if not data:
                if self.done or not self.carry:
                    self.done = True
                    return b""
                self.done = True  # the end: what was held back is judged as it is
                data, self.carry = self.carry, b""
                return self._hand(self._careful(data))
            if self.first:
                self.first = False
                data = data.removeprefix(_BOM)
            data = self.carry + data if self.carry else data
            self.carry = b""
            out = self._take(data)
            if out:
                return self._hand(out)

    def _take(self, data: bytes) -> bytes:
        if not self.skipping and b"\\" not in data:
            fast = self._plain(data)
            if fast is not None:
                return fast
        return self._careful(data)

    def _plain(self, data: bytes) -> bytes | None:
        """No backslash: every quote opens or closes a string. None when a string passes
        the cap here (the careful way cuts it)."""
        pieces = data.split(b'"')
        inside = pieces[0 if self.in_string else 1 :: 2]  # the string texts, in order
        if inside:
            first = len(inside[0]) + (self.length if self.in_string else 0)
            if first > MAX_STRING_BYTES or max(map(len, inside)) > MAX_STRING_BYTES:
                return None
        closing = (len(pieces) - 1) % 2 == 1
        ends_inside = self.in_string != closing
        if ends_inside:
            tail = len(pieces[-1])
            self.length = tail + (self.length if len(pieces) == 1 else 0)
            if self.length > MAX_STRING_BYTES:
                return None
        else:
            self.length = 0
        if self.digits + len(data) - len(data.lstrip(_DIGITS)) <= MAX_NUMBER_DIGITS and (
            _TOO_LONG not in data.translate(_AS_RUNS)
        ):  # no run of digits is too long, in a string or not: only the last one is counted
            self.digits = 0 if ends_inside else _run_after(self.digits, data)
            self.in_string = ends_inside
            return data
        cut = False
        for index in range(1 if self.in_string else 0, len(pieces), 2):  # between strings
            if index:
                self.digits = 0  # a string came before this text
            shorter = self._between(pieces[index])
            if shorter is not None:
                pieces[index], cut = shorter, True
        if ends_inside:
            self.digits = 0
        self.in_string = ends_inside
        return b'"'.join(pieces) if cut else data

    def _between(self, text: bytes) -> bytes | None:
        """Text between strings with every run of digits cut to MAX_NUMBER_DIGITS (the run
        the last read ended in counted); None when no run is that long."""
        before = self.digits
        leading = len(text) - len(text.lstrip(_DIGITS))
        self.digits = _run_after(before, text)
        if before + leading <= MAX_NUMBER_DIGITS and _TOO_LONG not in text.translate(_AS_RUNS):
            return None
        first = max(0, MAX_NUMBER_DIGITS - before)

        def kept(run: re.Match[bytes]) -> bytes:
            return run[0][: first if run.start() == 0 else MAX_NUMBER_DIGITS]

        return _DIGIT_RUN.sub(kept, text)

    def _careful(self, data: bytes) -> bytes:
        """Special byte by special byte: escapes, lone surrogates, the cap. `data[kept:at]`
        is what is still to be written out; a dropped run moves `kept` past it."""
        out: list[bytes] = []
        kept = at = 0
        n = len(data)
        while at < n:
            if not self.in_string:
                quote = data.find(b'"', at)
                end = n if quote < 0 else quote
                shorter = self._between(data[at:end])
                if shorter is not None:
                    out += [data[kept:at], shorter]
                    kept = end
                if quote < 0:
                    break
                self.digits = 0
                self.in_string, self.length, at = True, 0, quote + 1
                continue
            found = _SPECIAL.search(data, at)
            end = n if found is None else found.start()
            if self.skipping:
                kept = end  # the run is dropped
            elif self.length + (end - at) > MAX_STRING_BYTES:
                cut = max(at, at + MAX_STRING_BYTES - self.length)
                while cut < end and 0x80 <= data[cut] < 0xC0:  # at a character's start
                    cut += 1
                out.append(data[kept:cut])
                kept, self.skipping = end, True
            self.length += end - at
            at = end
            if found is None:
                break
            if data[at] == ord('"'):  # the string ends; its quote is kept
                self.in_string = self.skipping = False
                self.length = 0
                at += 1
                continue
            escape_end = self._escape_end(data, at)
            if escape_end is None:  # cut off by this read: judged with the next one
                if not self.skipping:
                    out.append(data[kept:at])
                self.carry = data[at:]
                return b"".join(out)
            lone, escape_end = escape_end < 0, abs(escape_end)
            if self.skipping:
                kept = escape_end
            elif lone:
                out.append(data[kept:at])
                out.append(LONE_SURROGATE)
                kept = escape_end
            self.length += escape_end - at
            at = escape_end
        out.append(data[kept:])
        return b"".join(out)

    def _escape_end(self, data: bytes, at: int) -> int | None:
        """Where the escape at `at` ends: negated for a lone surrogate (6 bytes), None when
        the read cut it off before it could be judged (at the end of the file, it is judged
        as it is: not JSON, which the parser then says)."""
        n = len(data)
        if at + 2 > n:
            return n if self.done else None
        if data[at + 1] != ord("u"):
            return at + 2
        if at + 6 > n:
            return n if self.done else None
        escape = data[at : at + 6]
        kind = _surrogate(escape) if all(c in _HEX for c in escape[2:]) else None
        if kind is None:
            return at + 6  # a character (or not JSON, which the parser says)
        if kind == "low":
            return -(at + 6)  # a low surrogate with no high one before it
        if at + 12 > n and not self.done:
            return None
        if data[at + 6 : at + 8] == b"\\u" and _surrogate(data[at + 6 : at + 12]) == "low":
            return at + 12  # a pair: one character
        return -(at + 6)
