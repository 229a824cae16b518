"""Worker processes the chaos bench starts, SIGKILLs and replaces."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = b"worker for "
"""Both entry points say this once the worker is built (worker.py logs it, `adkt worker` prints it)."""


@dataclass
class WorkerProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    started_at: float
    ready_at: float | None = None
    killed_at: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def identity(self) -> str:
        """The identity Temporal records for this worker: the SDK's default, pid@host."""
        return f"{self.pid}@{socket.gethostname()}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def check_ready(self) -> bool:
        if self.ready_at is None and READY_LINE in self.log.read_bytes():
            self.ready_at = time.time()
        return self.ready_at is not None


@dataclass
class WorkerPool:
    """``size`` worker processes for the chaos app on one task queue, each logging to its own file."""

    address: str
    namespace: str
    database_url: str
    task_queue: str
    log_dir: Path
    env: dict[str, str]
    entry: str = "worker.py"
    """"worker.py" runs ``python worker.py``, "adkt" runs ``python -m adkt.main worker``."""
    app_spec: str = "bench.chaos.app:app"
    workers: list[WorkerProcess] = field(default_factory=list)

    def _command(self) -> list[str]:
        args = ["--app", self.app_spec, "--address", self.address, "--database-url", self.database_url,
                "--task-queue", self.task_queue]  # fmt: skip
        if self.entry == "adkt":
            return [sys.executable, "-m", "adkt.main", "worker", *args]
        return [sys.executable, "worker.py", *args]

    def start_one(self) -> WorkerProcess:
        log = self.log_dir / f"worker-{len(self.workers):03d}.log"
        env = {**os.environ, **self.env, "PYTHONPATH": str(ROOT), "TEMPORAL_NAMESPACE": self.namespace}
        with log.open("wb") as out:
            proc = subprocess.Popen(
                self._command(), cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        worker = WorkerProcess(proc, log, time.time())
        self.workers.append(worker)
        return worker

    def live(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.killed_at is None and w.alive()]

    def ready(self) -> list[WorkerProcess]:
        return [w for w in self.live() if w.check_ready()]

    async def wait_ready(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.ready()) < count:
            for w in self.workers:
                if w.killed_at is None and not w.alive():
                    raise RuntimeError(f"worker {w.pid} exited with {w.proc.returncode}:\n{_tail(w.log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{count} workers not ready within {timeout:g}s; logs in {self.log_dir}")
            await asyncio.sleep(0.05)

    def kill(self, worker: WorkerProcess) -> float:
        """SIGKILL ``worker``; returns the time of the kill."""
        worker.killed_at = time.time()
        os.kill(worker.pid, signal.SIGKILL)
        worker.proc.wait(timeout=10)
        return worker.killed_at

    def unexpected_exits(self) -> list[WorkerProcess]:
        """Workers that died without being killed by us."""
        return [w for w in self.workers if w.killed_at is None and not w.alive()]

    async def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the live workers (a graceful shutdown), SIGKILL whatever is left after ``timeout``."""
        for w in self.live():
            w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(w.alive() for w in self.workers) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        for w in self.workers:
            if w.alive():
                w.proc.kill()
            w.proc.wait(timeout=10)


def _tail(path: Path, limit: int = 3000) -> str:
    return path.read_bytes()[-limit:].decode(errors="replace")
