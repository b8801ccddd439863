"""The one exception type the client raises (SPEC 7's error body, as a Python exception)."""

from __future__ import annotations

from typing import Any


class AiroiError(Exception):
    """A request the service refused or could not answer.

    `status` is the HTTP status (0 when no response arrived at all), `message` the
    service's one sentence, `request_id` the id the service gave the request, when it
    gave one (an `X-Request-Id` header or `error.request_id` in the body), and `body`
    the decoded error body, when there was one.
    """

    def __init__(
        self,
        status: int,
        message: str,
        request_id: str | None = None,
        *,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(status, message, request_id)
        self.status = status
        self.message = message
        self.request_id = request_id
        self.body = body

    def __str__(self) -> str:
        suffix = f" (request {self.request_id})" if self.request_id else ""
        # Status 0 is no response at all: there is no status to show.
        prefix = f"{self.status}: " if self.status else ""
        return f"{prefix}{self.message}{suffix}"


class MissingExtraError(ImportError):
    """A method needs a package that an extra of `airoi` installs and that is missing.

    Its message names the method, the packages it needs, which are missing, and the
    command that installs them: "to_pandas() needs pandas and pyarrow (pyarrow is not
    installed): pip install -e '.[dataframe]' in the airoi clone". `extra` is the extra's
    name and `missing` the packages that could not be imported; `name` (as for any
    ImportError) is the first.
    """

    def __init__(self, call: str, needs: tuple[str, ...], missing: list[str], extra: str) -> None:
        what = " and ".join(needs)
        absent = " and ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        super().__init__(
            f"{call} needs {what} ({absent} {verb} not installed): "
            f"pip install -e '.[{extra}]' in the airoi clone",
            name=missing[0],
        )
        self.call = call
        self.extra = extra
        self.missing = missing


def require(call: str, extra: str, *modules: str) -> None:
    """Import `modules`, or raise MissingExtraError naming `extra`; before any row is asked,
    so that a missing package is said at once, not after the whole list was fetched."""
    import importlib

    missing: list[str] = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise MissingExtraError(call, modules, missing, extra)


class CopyError(Exception):
    """The store cannot be read as a copy `airoi pull` wrote (one sentence saying why)."""
