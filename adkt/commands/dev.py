"""`adkt dev`: the whole stack on a laptop in one command."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.panel import Panel

from adkt.commands._common import default_app_specs, error_line, run_async
from adkt.commands._devstate import DEV_STATE_FILE, DevState
from adkt.commands._render import err, out
from adkt.settings import Settings

if TYPE_CHECKING:
    from adkt.commands._stack import Stack


def dev(
    app: Annotated[
        list[str] | None, typer.Option("--app", help="an app: path/to/agent.py[:attr], agent.yaml, a folder or module:attr (repeatable)")
    ] = None,
    ui_port: Annotated[int, typer.Option("--ui-port", help="Temporal Web UI port")] = 8233,
    port: Annotated[int, typer.Option("--port", help="Temporal gRPC port")] = 7233,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="state folder (default: ADK_DIR or .adk)")] = None,
    database_url: Annotated[
        str | None, typer.Option("--database-url", help="use this Postgres instead of an embedded one")
    ] = None,
    sim_port: Annotated[int, typer.Option("--sim-port", help="port of the dev chat page, HTTP API and agent simulator (0: any free port)")] = 8710,
    reload: Annotated[
        bool, typer.Option("--reload", help="restart the worker when the apps' .py files change")
    ] = False,
    encrypt: Annotated[
        bool,
        typer.Option("--encrypt", help="encrypt every payload (key file under the state folder unless "
                     "ADK_ENCRYPTION_KEYS is set); the UI decodes through a local codec server"),
    ] = False,
) -> None:
    """Start Temporal (with its UI), Postgres, a worker for the apps and the agent simulator's page;
    Ctrl-C stops everything. The worker's log (failed workflow tasks, tool errors) shows here."""
    run_async(_dev(app or [], ui_port, port, data_dir, database_url, sim_port, reload, encrypt))


async def _dev(
    specs: list[str], ui_port: int, port: int, data_dir: Path | None, database_url: str | None, sim_port: int = 8710,
    reload: bool = False, encrypt: bool = False,
) -> None:
    from adk_temporal.activities.eval_allow import working_directory_modules
    from adk_temporal.worker import configure_logging
    from adkt.commands._apps import load_app
    from adkt.commands._stack import embedded_stack, wait_for_signal
    from adkt.commands.web import dev_backend
    from adkt.web.security import web_access
    from adkt.web.serve import bind, durable_service, serving

    # Before any client connects (it routes the Rust core's log too): failed workflow tasks and
    # tool errors then show on this console.
    configure_logging()
    settings = Settings.load()
    adk_dir = (data_dir or settings.adk_dir).absolute()
    specs = specs or default_app_specs()
    apps = [load_app(spec) for spec in specs]
    url = database_url or settings.database_url
    eval_suites = working_directory_modules()
    bind("127.0.0.1", sim_port).close()  # a taken port fails now, not after the servers started
    keys_file = _encryption_keys(adk_dir) if encrypt else None
    codec_cm = _codec_server(ui_port) if encrypt else None
    codec_url = await codec_cm.__aenter__() if codec_cm is not None else None
    try:
        with out.status("starting Temporal dev server, Postgres and a worker…"):
            stack_cm = embedded_stack(
                apps, settings, database_url=url, port=port, ui_port=ui_port,
                temporal_dir=adk_dir / "temporal", postgres_dir=adk_dir / "postgres",
                temporal_args=("--ui-codec-endpoint", codec_url) if codec_url else (),
                eval_suites=eval_suites,  # `adkt eval run --durable` (and the dev page) run this project's suites
            )  # fmt: skip
            stack = await stack_cm.__aenter__()
    except BaseException:
        if codec_cm is not None:
            await codec_cm.__aexit__(None, None, None)
        raise
    simulator = durable_service(stack.database_url, stack.client.client)
    api = dev_backend(stack.client, stack.database_url, apps, specs, stack.temporal.ui_url, eval_suites)  # the dev page and API
    try:
        access = web_access("127.0.0.1", settings.web)
        sim_cm = serving(simulator, port=sim_port, api=api, access=access)
        sim_url = await sim_cm.__aenter__()
    except BaseException:
        await api.close()
        await simulator.store.close()
        await stack_cm.__aexit__(None, None, None)
        raise
    try:
        state = DevState(
            address=stack.temporal.address, database_url=stack.database_url, task_queue=settings.task_queue,
            namespace=stack.temporal.namespace, ui_url=stack.temporal.ui_url, sim_url=sim_url, apps=specs,
            pid=os.getpid(), adk_model=settings.model, encryption_keys_file=keys_file,
        )  # fmt: skip
        state.write(adk_dir)
        out.print(Panel.fit(
            f"Temporal UI   [link={state.ui_url}]{state.ui_url}[/link]\n"
            f"Dev chat      [link={sim_url}]{sim_url}[/link]  (chat with the apps; HTTP API at {sim_url}/api/v1)\n"
            f"Simulator     [link={sim_url}/sim]{sim_url}/sim[/link]  (agents with a SimulatorPlugin wait here for a person)\n"
            f"Temporal      {state.address}  (namespace {state.namespace}, task queues {', '.join(stack.worker.task_queues)})\n"
            f"Database      {state.database_url}\n"
            f"{_encryption_line(keys_file, codec_url)}"
            f"Apps          {', '.join(f'{a.name} ({s})' for a, s in zip(apps, specs, strict=True))}\n"
            f"State         {adk_dir}  ({DEV_STATE_FILE} lets `adkt run/chat/sessions` find this stack)\n\n"
            f"Try: adkt run {specs[0]} \"hello\"      Ctrl-C stops everything"
            + ("      --reload: watching the apps' files" if reload else ""),
            title="adkt dev", border_style="green",
        ))  # fmt: skip
        if reload:
            await _serve_reloading(stack, specs)
        else:
            await wait_for_signal(stack.worker_task)
        out.print("[dim]stopping the simulator, worker, Postgres and Temporal…[/]")
    finally:
        (adk_dir / DEV_STATE_FILE).unlink(missing_ok=True)
        await sim_cm.__aexit__(None, None, None)
        await api.close()
        await simulator.store.close()
        await stack_cm.__aexit__(None, None, None)
        if codec_cm is not None:
            await codec_cm.__aexit__(None, None, None)
    out.print("[dim]stopped[/]")


def _encryption_line(keys_file: str | None, codec_url: str | None) -> str:
    return f"Encryption    keys in {keys_file}; the UI decodes through {codec_url}\n" if codec_url else ""


def _encryption_keys(adk_dir: Path) -> str | None:
    """The keys `--encrypt` uses: ADK_ENCRYPTION_KEYS(_FILE) when set, else a key file made once under
    the state folder (readable by this user only). This process's clients and worker pick it up
    from the environment; other commands from .adk/dev.json."""
    from adk_temporal.encryption import KEYS_ENV, KEYS_FILE_ENV, key_ring_from_env, new_key_line

    if os.environ.get(KEYS_ENV) or os.environ.get(KEYS_FILE_ENV):
        key_ring_from_env()  # refuses bad keys now, with the fix
        return os.environ.get(KEYS_FILE_ENV)
    path = adk_dir / "encryption.keys"
    if not path.exists():
        adk_dir.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text("# adkt dev --encrypt: newest key first (docs/security.md)\n" + new_key_line("dev1") + "\n")
    os.environ[KEYS_FILE_ENV] = str(path)
    key_ring_from_env()
    return str(path)


def _codec_server(ui_port: int) -> contextlib.AbstractAsyncContextManager[str]:
    """The codec server on a free loopback port, for the dev UI's origin."""
    from adk_temporal.asgi import serving_asgi
    from adk_temporal.encryption import codec_from_env
    from adkt.commands.encryption import guarded_codec_app

    codec = codec_from_env()
    assert codec is not None  # _encryption_keys ran first
    # The UI's port may be picked after this server starts (--ui-port 0): any loopback origin.
    origins = [f"http://{host}:{ui_port}" for host in ("127.0.0.1", "localhost")]
    loopback = r"http://(127\.0\.0\.1|localhost)(:[0-9]+)?"
    # Loopback Host names only: a DNS-rebinding page cannot read what it decrypts.
    app = guarded_codec_app(codec, bind_host="127.0.0.1", origins=origins, origin_regex=loopback)
    return serving_asgi(app, host="127.0.0.1", port=0, what="codec server", fix="free a loopback port")


async def _serve_reloading(stack: Stack, specs: list[str]) -> None:
    """Until SIGINT/SIGTERM: when an app's files change, import the apps again and restart the worker
    on them. A change that does not import keeps the running worker (and says why)."""
    import asyncio

    from adkt.commands._apps import load_app
    from adkt.commands._reload import SourceWatcher, app_folders, forget_modules
    from adkt.commands._stack import wait_for_signal

    watcher = SourceWatcher(app_folders(specs))
    while True:
        change = asyncio.ensure_future(watcher.changed())
        stop = asyncio.ensure_future(wait_for_signal(stack.worker_task))
        await asyncio.wait([change, stop], return_when=asyncio.FIRST_COMPLETED)
        if stop.done():
            change.cancel()
            stop.result()  # a worker that failed ends `adkt dev` with its error
            return
        stop.cancel()
        await asyncio.gather(stop, return_exceptions=True)
        names = ", ".join(path.name for path in change.result())
        err.print(f"changed: {names}; reloading the apps", style="yellow", markup=False)
        forget_modules(watcher.folders)
        try:
            apps = [load_app(spec) for spec in specs]
        except Exception as e:  # the edit does not import yet: keep serving the previous code
            err.print(f"{error_line(e)} — the worker keeps the previous code until the next change", markup=False)
            continue
        await stack.restart_worker(apps)
        err.print(f"worker restarted for {', '.join(app.name for app in apps)}", style="green", markup=False)
