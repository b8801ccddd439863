"""Conditional GET for /api/v1: a strong ETag on every 200, 304 on a matching If-None-Match;
and gzip for a client that asks for it.

The tag is the 128-bit XXH3 hash of the body bytes, so two answers share a tag
when they are byte for byte the same, and two that differ share one with a chance
of about 2**-128. It is not a cryptographic hash: it need only tell one body of
the caller's own account from another, never resist a forger, and on a 500-row
page (200 KB) it takes 2 microseconds where SHA-256 took 100.

The whole of a 200 is held before it is sent (a page is at most 500 rows),
which is also what lets a match be answered 304 with no body. Only a 200 is
looked at: the token, the plan and the parameters are checked first, so a 304
is never an answer to a request that would be refused.

A 200 of at least `GZIP_MIN_BYTES` is sent gzipped when the request's Accept-Encoding takes
gzip (RFC 9110 12.5.3), unless its handler encoded it already. Its tag is the body's with
`-gzip` added inside the quotes: the two encodings are different representations, so a strong
tag may not be shared (RFC 9110 8.8.3), and a tag kept from either is matched when the same
encoding is asked again. Every 200 and 304 says `Vary: Accept-Encoding`. Level 1: a 500-row
page of cost entries (236 KB) goes to 22 KB in 0.8 ms; level 6 made it 14 KB in 3.7 ms, which a
100 Mbit/s link sends in 0.6 ms less than the 22 KB (bench/README.md, bench.ceiling's
compression figures).
"""

from __future__ import annotations

import zlib
from collections.abc import MutableMapping
from typing import Any, cast

import xxhash
from litestar import Litestar

from airoi.buffered_answers import holding

Message = MutableMapping[str, Any]
# A 304 carries the validators and caching headers of the 200 it stands for, not its body.
_DROPPED_ON_304 = {b"content-length", b"content-type"}
# Set here, whatever the framework said.
_REPLACED = {b"etag", b"content-length", b"content-encoding", b"vary"}
# Only a 200 is tagged (and held whole to be).
_TAGGED: frozenset[int] = frozenset({200})
# Below this a body is sent as it is: gzip's own 18 bytes and the work would gain little.
GZIP_MIN_BYTES = 1024
GZIP_LEVEL = 1
_GZIP_TAG_SUFFIX = "-gzip"
_VARY = (b"vary", b"Accept-Encoding")


def entity_tag(body: bytes) -> str:
    return f'"{xxhash.xxh3_128_hexdigest(body)}"'


def none_match(if_none_match: str, tag: str) -> bool:
    """RFC 9110 13.1.2: If-None-Match uses the weak comparison, and "*" matches any tag."""
    candidates = (part.strip() for part in if_none_match.split(","))
    return any(c == "*" or c.removeprefix("W/") == tag for c in candidates)


def takes_gzip(accept_encoding: str | None) -> bool:
    """Whether an Accept-Encoding takes gzip: named (or x-gzip, or *) with a q above 0."""
    if not accept_encoding:
        return False
    named: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        named[coding.strip().lower()] = q
    for coding in ("gzip", "x-gzip", "*"):
        if coding in named:
            return named[coding] > 0
    return False


def gzipped(body: bytes) -> bytes:
    """`body` in the gzip format, the same bytes for the same body (no time in its header)."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: the gzip container
    return compressor.compress(body) + compressor.flush()


def _header(scope: MutableMapping[str, Any], name: bytes) -> str | None:
    values = [bytes(v).decode("latin-1") for k, v in scope.get("headers", ()) if k == name]
    return ", ".join(values) if values else None


def conditional_get(app: Litestar, prefix: str) -> None:
    """Wrap the app's ASGI handler so GETs of `prefix` and under it get an ETag and may be
    answered 304."""
    inner: Any = app.asgi_handler
    root = prefix.rstrip("/")

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        path: str = scope.get("path", "")
        tagged = path == root or path.startswith(f"{root}/")
        if scope["type"] != "http" or scope["method"] != "GET" or not tagged:
            await inner(scope, receive, send)
            return
        if_none_match = _header(scope, b"if-none-match")
        gzip_taken = takes_gzip(_header(scope, b"accept-encoding"))

        async def tag_200(held: Message, body: bytes) -> None:
            # A body its handler encoded already (the API reference's assets, compressed once)
            # is tagged and sent as it is.
            encoded = next(
                (v for k, v in held.get("headers", ()) if k.lower() == b"content-encoding"), None
            )
            compress = encoded is None and gzip_taken and len(body) >= GZIP_MIN_BYTES
            tag = entity_tag(body)
            if compress:
                tag = f'{tag[:-1]}{_GZIP_TAG_SUFFIX}"'
            headers = [(k, v) for k, v in held.get("headers", ()) if k.lower() not in _REPLACED]
            headers += [(b"etag", tag.encode()), _VARY]
            if if_none_match is not None and none_match(if_none_match, tag):
                headers = [(k, v) for k, v in headers if k.lower() not in _DROPPED_ON_304]
                await send({**held, "status": 304, "headers": headers})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if compress:
                body = gzipped(body)
                headers.append((b"content-encoding", b"gzip"))
            elif encoded is not None:
                headers.append((b"content-encoding", encoded))
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await inner(scope, receive, holding(send, _TAGGED, tag_200))

    app.asgi_handler = cast(Any, handler)
