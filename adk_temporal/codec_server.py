"""A codec server for the Temporal UI and CLI (`adkt codec-server`, `adkt dev --encrypt`).

Temporal's UI shows encrypted payloads as ciphertext; pointed at a codec server ("Codec Server
endpoint" in the UI, or `temporal ... --codec-endpoint`), it POSTs them to ``/decode`` and shows what
comes back. The protocol is Temporal's: ``{"payloads": [...]}`` in protobuf JSON, to ``/encode`` and
``/decode``, the namespace in ``X-Namespace``.

Who may decode: the browser calls this server from the UI's origin, so only the listed origins get
CORS approval, and with a token configured every request must carry ``Authorization: Bearer TOKEN``
(the UI sends its access token when "pass access token" is on). Without a token the server listens on
loopback only (``serve_codec`` refuses anything else), for one developer on their machine.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from adk_core.errors import AdkError
from adk_temporal.asgi import read_at_most

MAX_BODY_BYTES = 16 * 2**20
"""Larger requests are refused: the UI decodes one history page at a time."""


def codec_server_app(
    codec: PayloadCodec, *, origins: Sequence[str], token: str | None = None, namespaces: Sequence[str] | None = None,
    origin_regex: str | None = None,
) -> Starlette:
    """``codec`` behind ``/encode`` and ``/decode``.

    Args:
        origins: browser origins allowed to call it (the Temporal UI's, e.g. http://localhost:8233).
        token: when set, the bearer token every request must carry.
        namespaces: when set, the only namespaces (X-Namespace) it serves.
        origin_regex: origins matching it are allowed too (`adkt dev`: any loopback port, since its UI
            port may be picked after this server starts).
    """

    async def handle(request: Request, encode: bool) -> Response:
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return JSONResponse({"error": "a valid 'Authorization: Bearer' token is required"}, status_code=401)
        namespace = request.headers.get("x-namespace", "")
        if namespaces is not None and namespace not in namespaces:
            return JSONResponse({"error": f"namespace {namespace!r} is not served here"}, status_code=403)
        if "json" not in request.headers.get("content-type", ""):
            return JSONResponse({"error": "send Content-Type: application/json"}, status_code=415)
        body = await read_at_most(request, MAX_BODY_BYTES)  # a numeric Content-Length over it: before reading
        if body is None:
            return JSONResponse({"error": f"at most {MAX_BODY_BYTES // 2**20} MiB per request"}, status_code=413)
        try:
            payloads = json_format.Parse(body, Payloads())
        # ValueError covers JSONDecodeError and UnicodeDecodeError; RecursionError: nesting deeper than the parser goes.
        except (json_format.ParseError, ValueError, RecursionError) as e:
            reason = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
            return JSONResponse({"error": f'the body is not {{"payloads": [...]}} in protobuf JSON: {reason}'},
                                status_code=400)  # fmt: skip
        try:
            out = await (codec.encode(payloads.payloads) if encode else codec.decode(payloads.payloads))
        except AdkError as e:  # e.g. a key this server does not have
            return JSONResponse({"error": str(e)}, status_code=422)
        return Response(json_format.MessageToJson(Payloads(payloads=out)), media_type="application/json")

    async def encode(request: Request) -> Response:
        return await handle(request, True)

    async def decode(request: Request) -> Response:
        return await handle(request, False)

    return Starlette(
        routes=[Route("/encode", encode, methods=["POST"]), Route("/decode", decode, methods=["POST"])],
        middleware=[Middleware(
            CORSMiddleware, allow_origins=list(origins), allow_origin_regex=origin_regex, allow_methods=["POST"],
            allow_credentials=True,
            allow_headers=["content-type", "x-namespace", "authorization"],
        )],
    )
