"""`adkt`: the command line of adk-temporal.

    adkt run examples.w1:app "Please add 1 and 2, look up x, then add 3 and 4."
    adkt run my_app/agent.py "hi"   an app by its file (its `app`, else `root_agent`)
    adkt create my_app              a new app folder: agent, tool and a scripted-model test
    adkt dev [--reload]             Temporal + UI, Postgres and a worker; Ctrl-C stops all
    adkt chat examples.w1:app       a conversation in the terminal
    adkt pending APP USER SESSION   what a conversation waits for; `adkt reply` answers it
    adkt worker --app pkg.mod:app   a production worker (TEMPORAL_ADDRESS, ADK_DATABASE_URL)
    adkt deployment promote D B     make build B of worker deployment D current; conversations move
    adkt migrate                    create/upgrade the database tables
    adkt sessions list APP          read sessions from Postgres
    adkt users delete APP USER      delete a user's workflows and data everywhere (`sessions delete`: one)
    adkt retention install|worker   a schedule that prunes old stream chunks, eval runs, unreferenced payloads
    adkt sim                        the agent simulator: a person answers model requests in a browser
    adkt web [--app pkg.mod:app]    the dev chat page and HTTP API (`adkt api`: the API alone)
    adkt eval run CASES [--durable] run eval cases; `adkt eval list|show|compare` read stored runs
    adkt replay H.json --app M:app  replay exported workflow histories against this code (docs/replay.md)
    adkt check APP                  find callbacks that read the clock, random or uuid4 directly
    adkt mcp APP [--http PORT]      serve an app as an MCP server: MCP clients call it as a tool
    adkt a2a APP [--port PORT]      serve an app over A2A: other agents send it tasks

Each command lives in adkt/commands/; docs/cli.md describes what each one starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Annotated, NoReturn

import typer

from adkt.commands.a2a import a2a
from adkt.commands.check import check
from adkt.commands.create import create
from adkt.commands.deployment import deployment
from adkt.commands.dev import dev
from adkt.commands.encryption import codec_server, keygen
from adkt.commands.eval import evals
from adkt.commands.mcp import mcp
from adkt.commands.pending import pending, reply
from adkt.commands.replay import replay
from adkt.commands.retention import retention
from adkt.commands.run import chat, run
from adkt.commands.serve import migrate, worker
from adkt.commands.sessions import sessions, users
from adkt.commands.sim import sim
from adkt.commands.web import api, web

app = typer.Typer(
    name="adkt",
    help="Durable agents on Temporal: create, run, chat with and inspect ADK apps, and run their workers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: rich's panels label every flag `<bool>` and read `[dev]` in help text as markup.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"adkt {version('adk-temporal')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            print("adkt (adk-temporal, not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks (also ADK_DEBUG=1)")] = False,
    _version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    if debug:
        # An environment variable, so that the setting reaches Settings.load() wherever it is read.
        os.environ["ADK_DEBUG"] = "1"
    # Apps are named module:attr relative to where the command runs (as uvicorn and celery do);
    # a console script's sys.path starts at its bin/ folder, not the working directory.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


app.command()(dev)
app.command()(run)
app.command()(chat)
app.command()(pending)
app.command()(reply)
app.command()(create)
app.command()(worker)
app.command()(migrate)
app.command()(keygen)
app.command("codec-server")(codec_server)
app.command()(sim)
app.command()(web)
app.command()(api)
app.command()(replay)
app.command()(check)
app.command()(mcp)
app.command()(a2a)
app.add_typer(sessions, name="sessions")
app.add_typer(users, name="users")
app.add_typer(retention, name="retention")
app.add_typer(evals, name="eval")
app.add_typer(deployment, name="deployment")



def main(args: list[str] | None = None, prog_name: str | None = None) -> NoReturn:
    """The `adkt` console script (and `python worker.py`): the typer app, then an exit that skips
    interpreter finalization.

    Temporal's core runs native threads that forward their log lines into Python's logging
    (adk_temporal.worker.configure_logging). One that is still running while the interpreter
    finalizes aborts the process (``Fatal Python error: PyGILState_Release``, exit code -6) after
    the command itself succeeded: seen on `adkt run`. Once the command has returned, the servers it
    started are stopped and nothing is left that the OS does not clean up, so logs and streams are
    flushed and the process ends with the command's exit code.
    """
    code: int = 0
    try:
        app(args=args, prog_name=prog_name)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
