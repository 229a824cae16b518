"""What a process pays to start: modules every worker and CLI command imports leave out what only
some of them use (each check runs in a fresh interpreter, where sys.modules shows what was imported)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _imported_after(statement: str, modules: list[str]) -> list[str]:
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_worker_imports_neither_httpx_nor_alembic_until_it_needs_them() -> None:
    # httpx (with its command line's rich and click) comes with OpenApiToolset; Alembic with a migration
    # that has something to do (adk_core.sql.migrate). Together about 0.3 s of every start.
    assert _imported_after("import adk_core, adk_temporal.worker", ["httpx", "alembic"]) == []


def test_openapi_toolset_is_still_importable_by_name() -> None:
    assert _imported_after("from adk_core.tools import OpenApiToolset", ["httpx"]) == ["httpx"]
