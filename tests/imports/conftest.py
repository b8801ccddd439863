"""The served API of tests/client (one uvicorn server per database for the session), for the
tests that pull and verify a copy of what an import wrote."""

from tests.client.conftest import _api_servers, base_url  # noqa: F401 - fixtures, by name
