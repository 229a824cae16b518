"""Reading a request's JSON body with a size limit, for the HTTP API (api/dispatch.py) and the
simulator's decisions (app.py): a declared Content-Length over the limit is refused before anything
is read, a body streamed without one stops being read as soon as it passes the limit, and JSON that
cannot be parsed (bad bytes, nesting too deep) is the caller's 400, never a 500."""

from __future__ import annotations

import json

from starlette.requests import Request

from adk_temporal.asgi import read_at_most

MAX_BODY_BYTES = 32 * 2**20
"""The largest body the web app reads. The largest legitimate one is a message whose parts carry
inline data: a blob may hold up to adk_core.types.MAX_INLINE_DATA_SIZE (10 MB), 13.4 MiB as base64
JSON, so two full-size blobs and their text fit; larger files go as artifacts (file_data parts)."""
MAX_JSON_DEPTH = 64
"""Objects and arrays nested deeper are refused; no body the API takes comes near it."""


class BodyError(Exception):
    """A body the server will not read or cannot parse: ``status`` (400, 413), ``kind`` and a message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body's bytes, read as they arrive; BodyError (413) once it is larger than ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise BodyError(400, "InvalidContentLength", f"Content-Length {declared!r} is not a number of bytes") from None
        if size > limit:
            raise _too_large(limit, f"{size} bytes")
    received = await read_at_most(request, limit)
    if received is None:  # a body sent without (or beyond) its Content-Length: no longer read past the limit
        raise _too_large(limit, "more")
    return received


async def read_json(request: Request, limit: int = MAX_BODY_BYTES, *, expected: str = "a JSON object") -> object:
    """The parsed JSON body (``{}`` for an empty one); BodyError (400 InvalidJson, 413) otherwise."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    # ValueError: not JSON, or not UTF-8 (JSONDecodeError and UnicodeDecodeError are ValueErrors);
    # RecursionError: nesting deeper than the parser's stack (b"[" * 100_000).
    except (ValueError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
        raise BodyError(400, "InvalidJson", f"the request body is not JSON ({reason}); send {expected}") from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        # What the parser takes (about 1000 levels) pydantic cannot serialize again (about 250): stored
        # in a session's state, it would make every later read of the session fail.
        raise BodyError(400, "InvalidJson", f"the request body nests deeper than {MAX_JSON_DEPTH} levels; send {expected}")
    return value


def _deeper_than(value: object, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:  # a loop, not recursion: the depth is what is being checked
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_large(limit: int, got: str) -> BodyError:
    return BodyError(
        413, "BodyTooLarge",
        f"the request body is larger than this server's limit of {limit} bytes ({limit // 2**20} MiB; got {got}). "
        "Send large files as artifacts (a file_data part) instead of inline data",
    )  # fmt: skip
