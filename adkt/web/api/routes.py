"""The route table's shape: one ``Endpoint`` per operation. The dispatcher (dispatch.py) and the
OpenAPI generator (openapi.py) both read the same table, so what is documented is what is served."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..security.principal import Principal
from .backend import ApiBackend

PREFIX = "/api/v1"

PATH_PARAMS = {
    "app": "app name",
    "user": "user id",
    "session": "session id",
    "call_id": "call id",
    "run_id": "run id",
}
"""Every path parameter and the id kind adk_core.ids validates it as."""


@dataclass(frozen=True)
class Sse:
    """One server-sent event of a streaming endpoint."""

    event: str
    data: BaseModel
    id: str | None = None


@dataclass
class Call:
    """One request as a handler sees it: path ids already validated, query and body parsed, the caller
    allowed to reach the path's user (dispatch.py)."""

    backend: ApiBackend
    path: dict[str, str]
    principal: Principal
    query: Any = None
    body: Any = None


Handler = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True)
class Endpoint:
    """One operation. ``response`` is the model a JSON handler returns (checked on every call);
    a streaming handler returns an async iterator of ``Sse`` whose data models are ``events``.
    ``operator``: only callers with the operator role may call it; any other endpoint whose path names a
    ``{user}`` serves that user and operators only."""

    method: str
    path: str
    handler: Handler
    summary: str
    response: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    status: int = 200
    errors: tuple[int, ...] = ()
    events: dict[str, type[BaseModel]] = field(default_factory=dict)
    description: str = ""
    operator: bool = False

    @property
    def streams(self) -> bool:
        return bool(self.events)

    @property
    def params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    def match(self, path: str) -> dict[str, str] | None:
        """The raw (still percent-encoded) path parameters when ``path`` is this endpoint's."""
        found = _pattern(self.path).fullmatch(path)
        return found.groupdict() if found else None


def _pattern(path: str) -> re.Pattern[str]:
    # Parameters match one raw segment: an id holding '/' arrives as %2F and is decoded after matching.
    return re.compile(re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", re.escape(path).replace(r"\{", "{").replace(r"\}", "}")))


StreamHandler = Callable[[Call], Awaitable[AsyncIterator[Sse]]]
