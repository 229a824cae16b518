"""EmbeddedPostgres(shared=True): processes take turns on one data directory instead of failing on
its postmaster.pid; the last user stops the server (issue #10 item 8)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from adkt.embedded import EmbeddedPostgres
from adkt.embedded.postgres import _postmaster_pid

pytestmark = pytest.mark.integration


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Outside /tmp/pytest-of-<user>: see test_cli_newcomer's tmp_path.
    folder = Path(tempfile.mkdtemp(prefix="adkt-shared-pg-"))
    yield folder / "postgres"
    shutil.rmtree(folder, ignore_errors=True)


async def _answers(url_port: int) -> bool:
    async with await psycopg.AsyncConnection.connect(f"host=127.0.0.1 port={url_port} user=postgres dbname=adk") as conn:
        return (await (await conn.execute("SELECT 1")).fetchone()) == (1,)


async def test_a_second_user_attaches_and_the_last_one_stops_it(data_dir: Path) -> None:
    first = EmbeddedPostgres(data_dir, durable=False, shared=True)
    second = EmbeddedPostgres(data_dir, durable=False, shared=True)
    await first.start()
    await second.start()  # without sharing: "lock file postmaster.pid already exists"
    assert second.port == first.port
    server = _postmaster_pid(data_dir)
    assert server is not None

    await first.stop()  # the one that started it leaves first: the server stays for the other
    assert _postmaster_pid(data_dir) == server
    assert await _answers(second.port)

    await second.stop()
    assert _postmaster_pid(data_dir) is None
    assert not list((data_dir.parent / "postgres.users").iterdir())


async def test_a_killed_users_lease_does_not_keep_the_server(data_dir: Path) -> None:
    owner = EmbeddedPostgres(data_dir, durable=False, shared=True)
    await owner.start()
    # A user that died without stopping: a lease named after a pid that no longer runs.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (data_dir.parent / "postgres.users" / f"{int(gone.stdout)}-dead").touch()
    await owner.stop()
    assert _postmaster_pid(data_dir) is None


async def test_a_server_left_by_killed_users_is_reused_and_then_stopped(data_dir: Path) -> None:
    script = (
        "import asyncio, os\n"
        "from adkt.embedded import EmbeddedPostgres\n"
        f"pg = EmbeddedPostgres({str(data_dir)!r}, durable=False, shared=True)\n"
        "asyncio.run(pg.start())\n"
        "os._exit(0)  # as if killed: no stop()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    orphan = _postmaster_pid(data_dir)
    assert orphan is not None  # shared servers outlive their starter

    user = EmbeddedPostgres(data_dir, durable=False, shared=True)
    await user.start()
    assert _postmaster_pid(data_dir) == orphan and await _answers(user.port)
    await user.stop()
    assert _postmaster_pid(data_dir) is None
