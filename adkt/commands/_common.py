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

T = TypeVar("T")

DEFAULT_APPS = ("examples.support_desk:app", "examples.w1:app")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine; our own errors end the command with their message and exit code 1."""
    from adk_core.errors import AdkError

    try:
        return asyncio.run(coro)
    except AdkError as e:
        err.print(f"[red]error:[/] {e}", markup=True, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def app_ref(spec: str) -> tuple[App | None, str]:
    """`module:attr` loads the App (its name is the App's); a bare name refers to an app that a
    worker elsewhere serves."""
    from worker import load_app

    if ":" in spec:
        app = load_app(spec)
        return app, app.name
    return None, spec


def require_app(app: App | None, spec: str) -> App:
    from adk_core.errors import ConfigurationError

    if app is None:
        raise ConfigurationError(
            f"no Temporal server is configured, so this command must serve the app itself, but {spec!r} is "
            "only a name: pass it as module:attr (e.g. examples.w1:app), start `adkt dev`, or set TEMPORAL_ADDRESS"
        )
    return app


def default_app_specs() -> list[str]:
    """The first of DEFAULT_APPS that imports."""
    from adk_core.errors import ConfigurationError
    from worker import load_app

    for spec in DEFAULT_APPS:
        try:
            load_app(spec)
        except ConfigurationError as e:
            err.print(f"[dim]{spec} not loaded ({e})[/]")
            continue
        return [spec]
    raise ConfigurationError(f"none of the default apps {DEFAULT_APPS} can be imported; pass --app module:attr")
