"""Helpers every command shares: running a coroutine with friendly errors, loading apps.

The command modules import adk_core, temporalio and the worker inside the commands, so that
`adkt --help` and `adkt sessions` do not pay for what they do not use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from adkt.commands._render import err

if TYPE_CHECKING:
    from adk_core import App
    from adkt.commands._apps import AppSpec

T = TypeVar("T")

DEFAULT_APPS = ("examples.support_desk:app", "examples.w1:app")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine. Errors end the command with one line (exit code 1) and Ctrl-C with
    exit code 130; `adkt --debug` (or ADK_DEBUG=1) shows the traceback instead."""
    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as e:
        # typer's own exits and usage errors (raised inside a command's coroutine) are typer's to print.
        if debug_enabled() or type(e).__module__.startswith(("typer", "click")):
            raise
        err.print(error_line(e), markup=False, highlight=False)
        raise typer.Exit(1) from None


def debug_enabled() -> bool:
    from adkt.settings import Settings

    return Settings.load().debug


def error_line(error: BaseException) -> str:
    """One line for an error: ours say what to do; a connection error says where; anything else is a bug
    report waiting to happen, so it points at --debug."""
    from adk_core.errors import AdkError

    if isinstance(error, AdkError):
        return f"error: {error}"
    connection = connection_problem(error)
    if connection is not None:
        return f"error: {connection}"
    return f"error: {type(error).__name__}: {error} (unexpected; rerun with --debug for the traceback)"


def connection_problem(error: BaseException) -> str | None:
    """What to tell the user when `error` means a server (Temporal, Postgres) cannot be reached."""
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(error, RPCError) and error.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return f"cannot reach Temporal ({error.message}); is the server (or `adkt dev`) still running?"
    if isinstance(error, RuntimeError) and str(error).startswith("Failed client connect"):
        return (f"cannot connect to Temporal: {error}. Check TEMPORAL_ADDRESS / --address, or start `adkt dev` "
                "(or unset them to let the command start its own)")  # fmt: skip
    if type(error).__module__.startswith(("psycopg", "sqlalchemy")) and "connect" in str(error).lower():
        first = str(error).strip().splitlines()[0]
        return f"cannot connect to the sessions database: {first}. Check ADK_DATABASE_URL / --database-url"
    if isinstance(error, ConnectionError):
        return f"connection failed: {error}"
    return None


def app_ref(spec: str) -> tuple[App | None, str, AppSpec]:
    """The App when `spec` names a module, file or folder (its name is the App's); a bare name refers
    to an app that a worker elsewhere serves."""
    from adkt.commands._apps import load_app, parse_app_spec

    parsed = parse_app_spec(spec)
    if parsed.loadable:
        app = load_app(parsed)
        return app, app.name, parsed
    return None, spec, parsed


def require_app(app: App | None, spec: str) -> App:
    from adk_core.errors import ConfigurationError

    if app is None:
        raise ConfigurationError(
            f"no Temporal server is configured, so this command must serve the app itself, but {spec!r} is "
            "only a name: name its file (e.g. my_app/agent.py) or module:attr (e.g. examples.w1:app), "
            "or start `adkt dev --app ...` in another terminal"
        )
    return app


def default_app_specs() -> list[str]:
    """The first of DEFAULT_APPS that imports."""
    from adk_core.errors import ConfigurationError
    from adkt.commands._apps import load_app

    for spec in DEFAULT_APPS:
        try:
            load_app(spec)
        except ConfigurationError as e:
            err.print(f"{spec} not loaded ({e})", style="dim", markup=False)
            continue
        return [spec]
    raise ConfigurationError(f"none of the default apps {DEFAULT_APPS} can be imported; pass --app module:attr")
