"""`adkt a2a APP`: serve an app over A2A (adkt/a2a_server.py): its agent card and JSON-RPC task endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import app_ref, run_async
from adkt.commands.run import Address, AppArg, DatabaseUrl
from adkt.commands.web import AllowedHosts, Insecure

if TYPE_CHECKING:
    from adkt.web.security import WebAccess


def a2a(
    app: AppArg,
    port: Annotated[int, typer.Option("--port", "-p", help="the port to serve HTTP on")] = 8001,
    host: Annotated[str, typer.Option("--host", help="the address to listen on")] = "127.0.0.1",
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            help="the URL clients reach this server at, as the agent card says (default: http://HOST:PORT/)",
        ),
    ] = None,
    user: Annotated[
        str, typer.Option("--user", "-u", help="the user id the conversations belong to")
    ] = "a2a",
    address: Address = None,
    database_url: DatabaseUrl = None,
    allowed_host: AllowedHosts = None,
    insecure: Insecure = False,
) -> None:
    """Serve APP over A2A: the agent card at /.well-known/agent-card.json and JSON-RPC at / (message/send,
    message/stream, tasks/get, tasks/cancel). Each A2A context is a durable conversation (its session id
    is the context id); a message sent again with the same message id gets the first turn's answer.
    Callers authenticate as on `adkt api` (ADK_API_KEYS, OIDC: docs/security.md); an authenticated
    caller's conversations are their own user's. Beyond loopback, authentication or --insecure is required."""
    try:
        import a2a  # noqa: F401
    except ImportError as error:
        raise typer.BadParameter(
            f"adkt a2a needs the a2a-sdk package ({error}): pip install 'adk-temporal[a2a]'"
        ) from None
    from urllib.parse import urlsplit

    from adk_core.errors import ConfigurationError
    from adkt.settings import Settings
    from adkt.web.security import web_access

    url = card_url(host, port, public_url)
    card_host = urlsplit(url).hostname or ""
    try:
        access = web_access(host, Settings.load().web, allowed_hosts=[*(allowed_host or []), card_host],
                            insecure=insecure)  # fmt: skip
    except ConfigurationError as error:
        raise typer.BadParameter(str(error)) from None
    run_async(_serve(app, host, port, url, user, address, database_url, access))


def card_url(host: str, port: int, public_url: str | None) -> str:
    """The address the agent card gives clients: --public-url, else this host and port."""
    if public_url is not None:
        if not public_url.startswith(("http://", "https://")):
            raise typer.BadParameter(
                f"--public-url {public_url!r} is not an http(s) URL; e.g. https://agents.example.com/"
            )
        return public_url
    if host in ("0.0.0.0", "::", ""):
        raise typer.BadParameter(
            f"with --host {host!r} the agent card needs the address clients use: pass --public-url http://<host name>:{port}/"
        )
    return f"http://{host}:{port}/"


async def _serve(spec: str, host: str, port: int, url: str, user: str, address: str | None,
                 database_url: str | None, access: WebAccess) -> None:  # fmt: skip
    from adk_temporal.asgi import serving_asgi
    from adkt.a2a_server import app_a2a_server
    from adkt.commands._conversation import open_connection
    from adkt.commands._render import err
    from adkt.commands._stack import wait_for_signal

    loaded, name, parsed = app_ref(spec)
    async with open_connection(
        loaded, parsed, name, address=address, database_url=database_url
    ) as connection:
        description = loaded.root_agent.description if loaded is not None else ""
        server = app_a2a_server(connection.client, name, url=url, description=description, user_id=user, access=access)
        async with serving_asgi(
            server, host=host, port=port, what="A2A server", fix="pick another with --port"
        ):
            err.print(f"serving {name!r} over A2A at {url} (agent card: {url.rstrip('/')}/.well-known/agent-card.json)"
                      "  Ctrl-C stops", markup=False)  # fmt: skip
            err.print(access.describe(), markup=False)
            await wait_for_signal()
            err.print("stopping…", markup=False)
