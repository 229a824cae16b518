"""`adkt check`: find workflow code in an app that reads the clock, randomness or fresh ids directly
(adk_temporal.determinism), which would break its conversations on replay (docs/replay.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import run_async
from adkt.commands._render import err

if TYPE_CHECKING:
    from adk_core import App
    from adk_temporal.determinism import DeterminismReport


WORKER_CHECK_SECONDS = 5.0
"""How long `adkt worker` lets the check of an app run before it starts anyway."""


def check(
    apps: Annotated[list[str], typer.Argument(metavar="APP", help="apps: path/to/agent.py[:attr], a folder or module:attr")],
    message: Annotated[
        list[str] | None, typer.Option("--message", help="the user's message of a scripted turn (repeatable: several turns)")
    ] = None,
) -> None:
    """Run a scripted turn of each app and report callbacks, plugins, instruction providers and inline
    tools that call time.time(), datetime.now(), random or uuid4 directly; exit code 1 if any does.

    Models are not called (a ScriptedModel answers with its script, others with a scripted answer
    that calls each tool and visits each sub-agent), and tools that run as activities are not run.
    """
    found = run_async(_check(apps, tuple(message or ())))
    if found:
        raise typer.Exit(1)


async def _check(specs: list[str], messages: tuple[str, ...]) -> int:
    from adkt.commands._apps import load_app

    found = 0
    for spec in specs:
        report = await check_loaded(load_app(spec), messages)
        if report.ok:
            err.print(f"ok      {report.app_name}: no direct clock, random or uuid calls in its workflow code", markup=False)
            for line in report.lines():
                err.print(f"        {line}", markup=False)
            continue
        found += len(report.findings)
        err.print(f"FAILED  {report.app_name}: workflow code that will not replay:", markup=False)
        for line in report.lines():
            err.print(f"        {line}", markup=False)
    return found


async def check_loaded(app: App, messages: tuple[str, ...] = (), *, timeout: float | None = None) -> DeterminismReport:
    from adk_temporal.determinism import CHECK_MESSAGE, CHECK_TIMEOUT_SECONDS, check_app

    return await check_app(app, messages=messages or (CHECK_MESSAGE,), timeout=timeout or CHECK_TIMEOUT_SECONDS)


async def warn_if_nondeterministic(apps: list[App]) -> None:
    """`adkt worker` at start: the same check, as a warning. Not a refusal: the check is a heuristic
    (a clock read only for a log line is harmless), and a worker that refuses to start during an
    incident or a rollback does more harm than the warning; `adkt check` in CI is the gate."""
    for app in apps:
        report = await check_loaded(app, timeout=WORKER_CHECK_SECONDS)
        if not report.ok:
            err.print(
                f"warning: app {app.name!r} has workflow code that will not replay (run `adkt check` for details):",
                markup=False,
            )
            for line in report.lines():
                err.print(f"  {line}", markup=False)
