"""An ASGI send that holds one kind of answer until its body is complete.

The ETag layer (airoi.conditional) and the tool endpoint's error layer
(airoi.tools.protocol_errors) both need a whole body before its first byte goes out: the
one to hash it, the other to replace it. Every other answer passes through as it comes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
# Given the held `http.response.start` and the whole body, sends the answer.
Finish = Callable[[Message, bytes], Awaitable[None]]


def holding(send: Send, statuses: frozenset[int], finish: Finish) -> Send:
    """`send`, except that an answer of one of `statuses` is handed whole to `finish`."""
    held: Message | None = None
    chunks: list[bytes] = []

    async def hold(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] in statuses:
            held = message
            return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        await finish(held, b"".join(chunks))

    return hold
