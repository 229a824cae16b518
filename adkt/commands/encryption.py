"""`adkt keygen` (a new encryption key) and `adkt codec-server` (the Temporal UI's decoder); see
docs/security.md, "Encryption"."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err, out


def keygen(key_id: Annotated[str, typer.Option("--id", help="the new key's id (e.g. the date)")] = "k1") -> None:
    """Print a new AES-256 key as 'id:BASE64'; put it first in ADK_ENCRYPTION_KEYS (newest first)."""
    from adk_temporal.encryption import KeyRing, new_key_line

    line = new_key_line(key_id)
    KeyRing.parse(line, source="--id")  # refuses an id the ring could not hold
    out.print(line, markup=False)


def codec_server(
    host: Annotated[str, typer.Option("--host", help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8081,
    origin: Annotated[
        list[str] | None,
        typer.Option("--origin", help="browser origin allowed to call it (repeatable; default: the dev UI's)"),
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", envvar="ADK_CODEC_TOKEN", help="bearer token every request must carry")
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="listen beyond loopback without a token (anyone who reaches it decrypts)")
    ] = False,
) -> None:
    """Serve /encode and /decode for the Temporal UI with the keys of ADK_ENCRYPTION_KEYS(_FILE)."""
    if not _loopback(host) and token is None and not insecure:
        raise typer.BadParameter(
            f"{host} is reachable from other machines: give --token (ADK_CODEC_TOKEN), or --insecure to "
            "let anyone who reaches it decrypt", param_hint="--host"
        )
    run_async(_serve(host, port, origin or ["http://localhost:8233", "http://127.0.0.1:8233"], token))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve(host: str, port: int, origins: list[str], token: str | None) -> None:
    import uvicorn

    from adk_core.errors import ConfigurationError
    from adk_temporal.codec_server import codec_server_app
    from adk_temporal.encryption import KEYS_ENV, codec_from_env

    codec = codec_from_env()
    if codec is None:
        raise ConfigurationError(f"no keys: set {KEYS_ENV} (adkt keygen makes one) or ADK_ENCRYPTION_KEYS_FILE")
    app = codec_server_app(codec, origins=origins, token=token)
    err.print(f"codec server on http://{host}:{port} for {', '.join(origins)}" + (" (token required)" if token else ""))
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")).serve()
