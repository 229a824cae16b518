"""`adkt keygen` (a new encryption key) and `adkt codec-server` (the Temporal UI's decoder); see
docs/security.md, "Encryption"."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err, out

if TYPE_CHECKING:
    from starlette.types import ASGIApp
    from temporalio.converter import PayloadCodec


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
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="a Host name to answer for besides the loopback names and --host, e.g. "
                     "codec.example.com or .example.com (repeatable; also ADK_ALLOWED_HOSTS)"),
    ] = None,  # fmt: skip
) -> None:
    """Serve /encode and /decode for the Temporal UI with the keys of ADK_ENCRYPTION_KEYS(_FILE)."""
    if not _loopback(host) and token is None and not insecure:
        raise typer.BadParameter(
            f"{host} is reachable from other machines: give --token (ADK_CODEC_TOKEN), or --insecure to "
            "let anyone who reaches it decrypt", param_hint="--host"
        )
    from adkt.settings import Settings

    hosts = [*Settings.load().web.allowed_hosts, *(allowed_host or [])]
    run_async(_serve(host, port, origin or ["http://localhost:8233", "http://127.0.0.1:8233"], token, hosts))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def guarded_codec_app(codec: PayloadCodec, *, bind_host: str, allowed_hosts: Sequence[str] = (), **options: Any) -> ASGIApp:
    """adk_temporal's codec server behind the web app's Host allowlist (loopback names, ``bind_host``
    unless a wildcard, ``allowed_hosts``). Without it a DNS-rebinding page, under a name it points at
    this machine, POSTs /decode same-origin and reads the plaintext (CORS never comes into it). The
    guard lives here, not in adk_temporal, which does not import the CLI's package; adkt/web's
    CrossSiteGuard would refuse the Temporal UI's own cross-origin POSTs, so only the Host is checked."""
    from adk_temporal.codec_server import codec_server_app
    from adkt.web.security import HostAllowlist, HostGuard, default_hosts

    hosts = HostAllowlist([*default_hosts(bind_host), *allowed_hosts])
    return HostGuard(codec_server_app(codec, **options), hosts)


async def _serve(host: str, port: int, origins: list[str], token: str | None, allowed_hosts: list[str]) -> None:
    import uvicorn

    from adk_core.errors import ConfigurationError
    from adk_temporal.encryption import KEYS_ENV, codec_from_env

    codec = codec_from_env()
    if codec is None:
        raise ConfigurationError(f"no keys: set {KEYS_ENV} (adkt keygen makes one) or ADK_ENCRYPTION_KEYS_FILE")
    app = guarded_codec_app(codec, bind_host=host, allowed_hosts=allowed_hosts, origins=origins, token=token)
    err.print(f"codec server on http://{host}:{port} for {', '.join(origins)}" + (" (token required)" if token else ""))
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")).serve()
