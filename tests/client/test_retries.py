"""Retries on 429 and 503 honouring Retry-After, bounded, over a fake transport."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from airoi.client import AiroiError, Client
from airoi.client.client import retry_after_seconds, without_userinfo
from airoi.client.dlt_source import rest_api_config

OK = {"data": [{"id": 1}], "page": {"has_more": False, "next_cursor": None}}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"status": status, "message": message}}
    return httpx.Response(status, json=body, headers=headers)


def scripted(*responses: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.MockTransport(handle), seen


def refuse_connection(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def client(transport: httpx.MockTransport, sleeps: list[float], **options: float) -> Client:
    sleep: Callable[[float], None] = sleeps.append
    return Client("http://api.test/api/v1", "secret", sleep=sleep, transport=transport, **options)  # type: ignore[arg-type]


def test_429_waits_as_retry_after_says() -> None:
    transport, seen = scripted(
        error(429, "Too many requests.", {"Retry-After": "2"}),
        error(503, "Busy.", {"Retry-After": "1"}),
        httpx.Response(200, json=OK),
    )
    sleeps: list[float] = []
    assert list(client(transport, sleeps).metrics()) == [{"id": 1}]
    assert sleeps == [2.0, 1.0]
    assert len(seen) == 3
    assert seen[0].headers["authorization"] == "Bearer secret"
    assert seen[0].url.params["limit"] == "500"


def test_each_wait_is_told_before_it_starts() -> None:
    transport, _ = scripted(
        error(429, "Too many requests.", {"Retry-After": "2", "X-Request-Id": "req-7"}),
        error(503, "Busy.", {"Retry-After": "1"}),
        httpx.Response(200, json=OK),
    )
    told: list[tuple[float, int, str, int]] = []
    sleeps: list[float] = []

    def on_wait(seconds: float, why: AiroiError) -> None:
        # Told before the sleep it announces: the sleeps so far are the earlier ones.
        told.append((seconds, why.status, why.message, len(sleeps)))

    sleep: Callable[[float], None] = sleeps.append
    api = Client("http://api.test", "secret", sleep=sleep, on_wait=on_wait, transport=transport)
    assert api.roi() == OK
    assert told == [(2.0, 429, "Too many requests.", 0), (1.0, 503, "Busy.", 1)]
    assert sleeps == [2.0, 1.0]


def unanswered(base_url: str, max_retries: int) -> tuple[list[AiroiError], AiroiError]:
    """What a client of `base_url` whose every connection is refused is told before each wait,
    and the error it finally raises."""
    told: list[AiroiError] = []
    api = Client(
        base_url,
        "secret",
        max_retries=max_retries,
        sleep=lambda _: None,
        on_wait=lambda _, why: told.append(why),
        transport=httpx.MockTransport(refuse_connection),
    )
    with pytest.raises(AiroiError) as refused:
        api.roi()
    return told, refused.value


def test_a_wait_for_no_answer_is_told_too() -> None:
    told, refused = unanswered("http://api.test", max_retries=2)
    assert refused.status == 0
    assert [(why.status, "connection refused" in why.message) for why in told] == [(0, True)] * 2


def test_closing_the_client_ends_a_wait_in_another_thread() -> None:
    transport, seen = scripted(*[error(429, "Too many requests.", {"Retry-After": "60"})] * 3)
    told = threading.Event()
    api = Client("http://api.test", "secret", on_wait=lambda *_: told.set(), transport=transport)
    failures: list[AiroiError] = []

    def fetch() -> None:
        try:
            api.roi()
        except AiroiError as exc:
            failures.append(exc)

    fetching = threading.Thread(target=fetch)
    fetching.start()
    assert told.wait(10)
    api.close()
    fetching.join(10)
    assert not fetching.is_alive()  # it did not sit out the 60 s Retry-After
    assert [(f.status, f.message) for f in failures] == [
        (0, "The client was closed while it waited to ask again.")
    ]
    assert len(seen) == 1


def test_retry_after_as_http_date() -> None:
    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds(later, now=now) == 7.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("-3") == 0.0


def test_without_retry_after_backs_off() -> None:
    transport, _ = scripted(error(503, "Busy."), error(503, "Busy."), httpx.Response(200, json=OK))
    sleeps: list[float] = []
    client(transport, sleeps).roi()
    assert len(sleeps) == 2
    assert 0 < sleeps[0] <= 0.5 < sleeps[1] <= 1.0


def test_retries_are_bounded_in_count() -> None:
    transport, seen = scripted(*[error(429, "Too many requests.", {"Retry-After": "1"})] * 4)
    sleeps: list[float] = []
    with pytest.raises(AiroiError) as refused:
        client(transport, sleeps, max_retries=3).roi()
    assert refused.value.status == 429
    assert refused.value.message == "Too many requests."
    assert len(seen) == 4
    assert sleeps == [1.0, 1.0, 1.0]


def test_retries_are_bounded_in_total_wait() -> None:
    transport, seen = scripted(
        error(429, "Slow down.", {"Retry-After": "30"}),
        error(429, "Slow down.", {"Retry-After": "30"}),
    )
    sleeps: list[float] = []
    with pytest.raises(AiroiError) as refused:
        client(transport, sleeps, max_wait=45).roi()
    assert refused.value.status == 429
    assert sleeps == [30.0]  # the second wait would pass max_wait: raised at once
    assert len(seen) == 2


def test_other_errors_are_not_retried() -> None:
    transport, seen = scripted(
        error(400, "The window parameter is not valid.", {"X-Request-Id": "req-42"})
    )
    sleeps: list[float] = []
    with pytest.raises(AiroiError) as refused:
        client(transport, sleeps).roi(window="all")
    assert (refused.value.status, refused.value.request_id) == (400, "req-42")
    assert refused.value.message == "The window parameter is not valid."
    assert sleeps == []
    assert len(seen) == 1


def test_non_json_error_and_no_response() -> None:
    transport, _ = scripted(httpx.Response(502, text="<html>bad gateway</html>"))
    with pytest.raises(AiroiError) as gateway:
        client(transport, []).roi()
    assert (gateway.value.status, gateway.value.message, gateway.value.body) == (
        502,
        "Bad Gateway",
        None,
    )

    sleeps: list[float] = []
    with pytest.raises(AiroiError) as unreachable:
        client(httpx.MockTransport(refuse_connection), sleeps, max_retries=2).roi()
    assert unreachable.value.status == 0
    assert len(sleeps) == 2


def test_a_200_that_is_not_json_is_an_airoi_error() -> None:
    # A proxy's HTML page or a body cut short: the README promises AiroiError for every failure.
    for response in (
        httpx.Response(200, text="<html>login</html>", headers={"x-request-id": "r-1"}),
        httpx.Response(200, text='{"data": [', headers={"x-request-id": "r-1"}),
    ):
        transport, _ = scripted(response)
        with pytest.raises(AiroiError) as caught:
            client(transport, []).roi()
        assert (caught.value.status, caught.value.message, caught.value.request_id) == (
            200,
            "The response is not a JSON object.",
            "r-1",
        )


def test_no_response_is_said_without_a_status() -> None:
    # Status 0 means no answer at all; "0: No response ..." read as if the service said 0.
    assert (
        str(AiroiError(0, "No response from http://api.test")) == "No response from http://api.test"
    )
    assert str(AiroiError(503, "Busy.", "r-2")) == "503: Busy. (request r-2)"


def test_a_base_url_without_a_scheme_is_not_retried() -> None:
    sleeps: list[float] = []
    api = Client("localhost:8000/api/v1", "secret", sleep=sleeps.append, max_retries=5)
    with pytest.raises(AiroiError) as caught:
        api.roi()
    assert caught.value.status == 0
    assert "is not an http:// or https:// URL" in caught.value.message
    assert sleeps == []


def test_a_password_in_the_base_url_is_never_said() -> None:
    # A credential never appears in a message, which goes to a terminal or a log.
    told, refused = unanswered("http://reader:pa55word@api.test:8000", max_retries=1)
    said = [why.message for why in told] + [refused.message]
    assert len(said) == 2
    for message in said:
        assert "http://api.test:8000/api/v1" in message
        assert "pa55word" not in message
        assert "reader" not in message


@pytest.mark.parametrize(
    "base_url", ["http://reader:pa55word@api.test:8000", "http://reader@api.test:8000/api/v1"]
)
def test_a_user_in_the_base_url_is_not_sent_and_the_token_is(base_url: str) -> None:
    # The API takes only the token (SPEC 5). A user:password@ in the address used to turn into
    # Basic credentials that replaced it: every request was 401, and the password was sent.
    transport, seen = scripted(httpx.Response(200, json=OK))
    api = Client(base_url, "secret", sleep=lambda _: None, transport=transport)
    assert api.roi() == OK
    assert seen[0].headers["authorization"] == "Bearer secret"
    assert str(seen[0].url) == "http://api.test:8000/api/v1/roi"


def test_a_token_read_with_its_line_break_is_sent_without_it() -> None:
    # A token read from a file or `$(cat token)` ends in a newline; the header cannot carry it.
    transport, seen = scripted(httpx.Response(200, json=OK))
    api = Client("http://api.test", " airoi_secret\n", sleep=lambda _: None, transport=transport)
    assert api.roi() == OK
    assert seen[0].headers["authorization"] == "Bearer airoi_secret"


@pytest.mark.parametrize("token", ["airoi_sec\r\nret", "airoi_sécret", "airoi_sec ret"])
def test_a_token_a_header_cannot_carry_is_refused_at_once_and_never_said(token: str) -> None:
    # It used to fail inside httpx, whose message quoted the whole header (the token), and was
    # retried as if the server had not answered: the token was printed on every wait.
    with pytest.raises(AiroiError) as refused:
        Client("http://api.test", token, sleep=lambda _: None)
    assert refused.value.status == 0
    assert refused.value.message == (
        "The token cannot be sent: it holds a space, a line break or a character that is not "
        "ASCII (the token is not shown)."
    )
    assert "sec" not in refused.value.message
    with pytest.raises(AiroiError) as empty:
        Client("http://api.test", " \n", sleep=lambda _: None)
    assert empty.value.message == "No token was given."
    # The dlt source's configuration holds the same token: refused the same way.
    with pytest.raises(AiroiError) as for_dlt:
        rest_api_config("http://api.test", token)
    assert for_dlt.value.message == refused.value.message
    assert rest_api_config("http://api.test", "airoi_x\n")["client"]["auth"]["token"] == "airoi_x"


def test_a_request_that_cannot_be_sent_is_not_retried_and_not_quoted() -> None:
    sleeps: list[float] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError("Illegal header value b'Bearer secret-value'")

    api = Client(
        "http://api.test", "secret", sleep=sleeps.append, transport=httpx.MockTransport(refuse)
    )
    with pytest.raises(AiroiError) as refused:
        api.roi()
    assert sleeps == []
    assert refused.value.status == 0
    assert "secret-value" not in refused.value.message
    assert refused.value.message == "The request to http://api.test/api/v1 could not be sent."


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("https://host.example:8443/api/v1?x=1", "https://host.example:8443/api/v1?x=1"),
        ("https://a:b@c@host.example/api/v1", "https://host.example/api/v1"),
        ("http://host.example/api/v1?next=a@b", "http://host.example/api/v1?next=a@b"),
        ("reader:pw@localhost:8000/api/v1", "localhost:8000/api/v1"),
        # No parser takes it, and it still must not be said with its password.
        ("http://reader:pw@[bad/api/v1", "http://[bad/api/v1"),
        # No scheme, and a "://" only in the query.
        ("reader:pw@host/?next=http://a@b", "host/?next=http://a@b"),
    ],
)
def test_an_address_is_shown_without_its_userinfo(given: str, shown: str) -> None:
    assert without_userinfo(given) == shown


@pytest.mark.parametrize(
    "base_url", ["reader:pa55word@host:8000", "http://reader:pa55word@host:port/api/v1"]
)
def test_a_base_url_that_cannot_be_asked_is_said_without_its_password(base_url: str) -> None:
    with pytest.raises(AiroiError) as refused:
        Client(base_url, "secret", sleep=lambda _: None, max_retries=0).roi()
    assert refused.value.status == 0
    assert "host" in refused.value.message
    assert "pa55word" not in refused.value.message
    assert "reader" not in refused.value.message


def test_the_first_failure_to_connect_is_said_at_once(caplog: pytest.LogCaptureFixture) -> None:
    transport = httpx.MockTransport(refuse_connection)
    said_before: list[int] = []

    def sleep(seconds: float) -> None:  # how many warnings were out when each wait began
        said_before.append(len(caplog.records))

    api = Client(
        "http://user:hunter2@api.test/api/v1",
        "airoi_secret-token",
        sleep=sleep,
        transport=transport,
        max_retries=3,
    )
    with caplog.at_level(logging.WARNING, logger="airoi.client"), pytest.raises(AiroiError):
        api.roi()
    warnings = [r for r in caplog.records if r.name == "airoi.client"]
    assert [r.getMessage() for r in warnings] == [
        "No response from http://api.test/api/v1: connection refused; asking again up to 3 "
        "times within 120 s."
    ]
    assert warnings[0].levelno == logging.WARNING
    # Said before the first wait, and the retries still follow within the bound.
    assert said_before == [1, 1, 1]
    assert api.requests_sent == 4
    for secret in ("airoi_secret-token", "hunter2", "user:"):
        assert secret not in caplog.text


def test_a_caller_told_of_waits_is_not_also_warned(caplog: pytest.LogCaptureFixture) -> None:
    told: list[AiroiError] = []
    api = Client(
        "http://api.test",
        "secret",
        sleep=lambda _: None,
        on_wait=lambda _, why: told.append(why),
        transport=httpx.MockTransport(refuse_connection),
        max_retries=2,
    )
    with caplog.at_level(logging.WARNING, logger="airoi.client"), pytest.raises(AiroiError):
        api.roi()
    assert len(told) == 2
    assert [r for r in caplog.records if r.name == "airoi.client"] == []


def test_an_answer_is_not_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    transport, _ = scripted(error(503, "Busy.", {"Retry-After": "1"}), httpx.Response(200, json=OK))
    api = client(transport, [])
    with caplog.at_level(logging.WARNING, logger="airoi.client"):
        assert api.roi() == OK
    assert [r for r in caplog.records if r.name == "airoi.client"] == []
