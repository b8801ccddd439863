"""The served API of tests/client and the tool endpoint of tests/tools (one uvicorn server per
database for the session), for the tests that read what an import wrote as a copy or a tool
would."""

from tests.client.conftest import _api_servers, base_url  # noqa: F401 - fixtures, by name
from tests.tools.conftest import _servers, served  # noqa: F401 - fixtures, by name
