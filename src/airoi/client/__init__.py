"""A Python client of the airoi HTTP API (SPEC 4.A), importable without the server.

    from airoi.client import Client

    api = Client("http://localhost:8000/api/v1", token)
    for entry in api.value_entries(status="approved"):  # follows cursors
        ...
    frame = api.value_entries(status="approved").to_pandas()

Only httpx and the standard library are imported here; pandas, pyarrow and polars are
imported when `to_pandas()`, `to_arrow()` or `to_polars()` is called (`pip install
'airoi[dataframe]'`, `'airoi[polars]'`); without them it raises `MissingExtraError`, which
names the extra.
"""

from airoi.client.client import Client, ListResult, Page, Row
from airoi.client.errors import AiroiError, MissingExtraError

__all__ = ["AiroiError", "Client", "ListResult", "MissingExtraError", "Page", "Row"]
