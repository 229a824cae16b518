"""`adkt web` (the dev chat page and the HTTP API) and `adkt api` (the HTTP API alone).

Both find Temporal and Postgres as `adkt run` does (adkt/commands/_devstate.resolve): a configured
Temporal, else a running `adkt dev`, else an embedded stack that serves the --app apps and lives as
long as the command.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from adkt.commands._common import app_ref, require_app, run_async
from adkt.commands._render import err
from adkt.settings import Settings

if TYPE_CHECKING:
    from adk_core import App
    from adkt.client import AdkClient
    from adkt.web.api.backend import ApiBackend
    from adkt.web.api.models import AppInfo

Apps = Annotated[
    list[str] | None,
    typer.Option("--app", help="module:attr of an App, or the name of one a worker elsewhere serves (repeatable)"),
]
Host = Annotated[str, typer.Option("--host", help="interface to listen on")]
Port = Annotated[int, typer.Option("--port", help="port of the page and API (0: any free port)")]
AllowedHosts = Annotated[
    list[str] | None,
    typer.Option("--allowed-host", help="a Host name to answer for besides the loopback names and --host, e.g. "
                 "app.example.com or .example.com (repeatable; also ADK_ALLOWED_HOSTS)"),
]  # fmt: skip
Insecure = Annotated[
    bool,
    typer.Option("--insecure", help="serve a non-loopback --host without authentication (anyone who reaches the "
                 "port is an operator; docs/security.md)"),
]  # fmt: skip
Address = Annotated[str | None, typer.Option("--address", help="Temporal address (default: TEMPORAL_ADDRESS, then .adk/dev.json)")]
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="sessions database (default: ADK_DATABASE_URL)")]
MetricsPort = Annotated[
    int | None,
    typer.Option("--metrics-port", envvar="ADK_METRICS_PORT", min=1, max=65535,
                 help="serve Prometheus metrics (the API's requests and open streams, Temporal's client) at /metrics"),
]
Tracing = Annotated[
    bool,
    typer.Option("--tracing", envvar="ADK_TRACING",
                 help="export OpenTelemetry traces with OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (docs/observability.md)"),
]
EvalSuite = Annotated[
    list[str] | None,
    typer.Option("--eval-suite", help="a module (or module:attr) whose eval suites the page may start; the worker must "
                 "allow it too (`adkt worker --eval-suite`), and an embedded stack's worker does (repeatable)"),
]
TemporalUi = Annotated[
    str | None,
    typer.Option("--temporal-ui", help="Temporal UI base URL for the workflow links (default: the running `adkt dev`'s)"),
]


def web(app: Apps = None, host: Host = "127.0.0.1", port: Port = 8000, address: Address = None,
        database_url: DatabaseUrl = None, temporal_ui: TemporalUi = None,
        allowed_host: AllowedHosts = None, insecure: Insecure = False, metrics_port: MetricsPort = None,
        tracing: Tracing = False, eval_suite: EvalSuite = None) -> None:  # fmt: skip
    """Serve the dev chat page (pick an app, chat, answer confirmations, browse sessions, start and compare
    eval runs), the HTTP API under /api/v1 and the agent simulator's page at /sim."""
    run_async(_serve(app or [], host, port, address, database_url, temporal_ui, page=True,
                     allowed_hosts=allowed_host or [], insecure=insecure, metrics_port=metrics_port,
                     tracing=tracing, eval_suites=eval_suite or []))  # fmt: skip


def api(app: Apps = None, host: Host = "127.0.0.1", port: Port = 8000, address: Address = None,
        database_url: DatabaseUrl = None, temporal_ui: TemporalUi = None,
        allowed_host: AllowedHosts = None, insecure: Insecure = False, metrics_port: MetricsPort = None,
        tracing: Tracing = False, eval_suite: EvalSuite = None) -> None:  # fmt: skip
    """Serve the HTTP API under /api/v1 (its OpenAPI schema at /api/v1/openapi.json; docs/web.md)."""
    run_async(_serve(app or [], host, port, address, database_url, temporal_ui, page=False,
                     allowed_hosts=allowed_host or [], insecure=insecure, metrics_port=metrics_port,
                     tracing=tracing, eval_suites=eval_suite or []))  # fmt: skip


@dataclass
class WebStack:
    client: AdkClient
    database_url: str
    temporal_ui: str | None


def app_infos(specs: list[str]) -> tuple[list[AppInfo], list]:
    """What the API lists for each --app, and the Apps that loaded (for an embedded worker)."""
    from adkt.web.api.models import AppInfo

    infos, loaded = [], []
    for spec in specs:
        ref = app_ref(spec)  # (app or None, name, ...): a bare name is an app a worker elsewhere serves
        app, name = ref[0], ref[1]
        if app is None:
            infos.append(AppInfo(name=name))
            continue
        loaded.append(app)
        infos.append(app_info(app, spec))
    return infos, loaded


def app_info(app: App, spec: str) -> AppInfo:
    from adkt.web.api.models import AppInfo

    root = app.root_agent
    return AppInfo(name=app.name, agent=root.name, description=getattr(root, "description", "") or "", spec=spec)


def dev_backend(client: AdkClient, database_url: str, apps: list[App], specs: list[str], temporal_ui: str | None,
                eval_suites: list[str] | None = None) -> ApiBackend:  # fmt: skip
    """The API as `adkt dev` serves it: its apps, its database, its Temporal UI, the eval suites its worker allows."""
    from adkt.web.api.backend import ApiBackend

    infos = [app_info(app, spec) for app, spec in zip(apps, specs, strict=True)]
    return ApiBackend.open(client, database_url, apps=infos, temporal_ui=temporal_ui, eval_suites=eval_suites)


@contextlib.asynccontextmanager
async def web_stack(
    specs: list[str], settings: Settings, *, address: str | None, database_url: str | None, temporal_ui: str | None,
    tracing: bool = False, eval_suites: list[str] | None = None,
) -> AsyncIterator[tuple[WebStack, list[str]]]:
    """The stack the page talks to and the app specs it serves (a running `adkt dev`'s by default)."""
    from adk_core.errors import ConfigurationError
    from adkt.client import AdkClient, connect
    from adkt.commands._devstate import resolve
    from adkt.commands._stack import embedded_stack

    target = resolve(settings, address=address, database_url=database_url)
    if target.dev is not None:
        specs = specs or target.dev.apps
        temporal_ui = temporal_ui or target.dev.ui_url
    if target.address is not None:
        if not target.database_url:
            raise ConfigurationError(
                "the page reads sessions from Postgres, and no database is configured: pass --database-url or set "
                "ADK_DATABASE_URL=postgresql+psycopg://..."
            )
        client = await connect(target.address, namespace=target.namespace, database_url=target.database_url,
                               tracing=tracing)
        adk = AdkClient(client, task_queue=target.task_queue, database_url=target.database_url)
        yield WebStack(adk, target.database_url, temporal_ui), specs
        return
    if not specs:
        raise ConfigurationError(
            "no Temporal is configured and no `adkt dev` runs, so this command serves the apps itself: "
            "pass --app module:attr (e.g. --app examples.w1:app)"
        )
    infos, loaded = app_infos(specs)
    for info in infos:
        if info.spec is None:
            require_app(None, info.name)  # a bare name: nothing here could serve it
    err.print("[dim]no Temporal configured and no `adkt dev` running: starting an embedded stack for this command[/]")
    # ui_port=0: the Temporal UI on a free port, so the page's workflow links lead somewhere.
    async with embedded_stack(loaded, settings, database_url=target.database_url, ui_port=0,
                              eval_suites=eval_suites or ()) as stack:  # fmt: skip
        if stack.temporal.ui_url:
            err.print(f"Temporal UI on {stack.temporal.ui_url}", highlight=False)
        yield WebStack(stack.client, stack.database_url, temporal_ui or stack.temporal.ui_url), specs


async def _serve(specs: list[str], host: str, port: int, address: str | None, database_url: str | None,
                 temporal_ui: str | None, *, page: bool, allowed_hosts: list[str], insecure: bool,
                 metrics_port: int | None = None, tracing: bool = False,
                 eval_suites: list[str] | None = None) -> None:  # fmt: skip
    from adk_core.sessions.sql import migrate
    from adkt.commands._stack import wait_for_signal
    from adkt.web.api.backend import ApiBackend
    from adkt.web.security import web_access
    from adkt.web.serve import bind, durable_service, serving

    bind(host, port).close()  # a taken port fails now, before anything starts
    if metrics_port is not None:
        from temporalio.runtime import Runtime, TelemetryConfig

        from adk_temporal.metrics import runtime_with_metrics

        # Before any client connects: clients and the API's instruments use the default runtime.
        Runtime.set_default(runtime_with_metrics(TelemetryConfig(), metrics_port), error_if_already_set=False)
        err.print(f"metrics: http://127.0.0.1:{metrics_port}/metrics", highlight=False)
    if tracing:
        from adk_temporal.tracing import configure_tracing

        tracer_provider = configure_tracing("adk-api")
    settings = Settings.load()
    access = web_access(host, settings.web, allowed_hosts=allowed_hosts, insecure=insecure)
    async with web_stack(specs, settings, address=address, database_url=database_url, temporal_ui=temporal_ui,
                         tracing=tracing, eval_suites=eval_suites) as (stack, specs):  # fmt: skip
        await migrate(stack.database_url)
        infos, _ = app_infos(specs)
        backend = ApiBackend.open(stack.client, stack.database_url, apps=infos, temporal_ui=stack.temporal_ui,
                                  eval_suites=eval_suites)  # fmt: skip
        simulator = durable_service(stack.database_url, stack.client.client) if page else None
        try:
            async with serving(simulator, host=host, port=port, api=backend, page=page, access=access) as url:
                what = "dev page" if page else "HTTP API"
                names = ", ".join(i.name for i in infos) or "any app a worker serves"
                err.print(access.describe(), style="bold red" if access.anonymous is not None and
                          access.anonymous.via == "insecure" else None, markup=False)  # fmt: skip
                err.print(f"{what} on [link={url}]{url}[/link]  (apps: {names}; API {url}/api/v1, "
                          f"schema {url}/api/v1/openapi.json)  Ctrl-C stops", highlight=False)  # fmt: skip
                await wait_for_signal()
                err.print("[dim]stopping…[/]")
        finally:
            await backend.close()
            if simulator is not None:
                await simulator.store.close()
            if tracing:
                tracer_provider.shutdown()  # sends the spans still batched
