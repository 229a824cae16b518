"""The runtime seam: adk_core reaches the clock, ids and randomness only through adk_core.runtime,
and never imports temporalio. Checked twice: by ruff's banned-api rule (pyproject) and by an AST walk
that does not depend on ruff's configuration."""

from __future__ import annotations

import ast
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adk_core import App, Content, Event, InMemorySessionService, LocalRuntime, Runner
from examples import w1

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "adk_core"
# Where adk_core implements the seam, or stores that stamp rows themselves, the real clock is allowed.
ALLOWED = ("adk_core/runtime.py", "adk_core/sessions/sql/", "adk_core/memory/sql.py", "adk_core/artifacts/sql.py")
BANNED_CALLS = {
    "time.time",
    "time.time_ns",
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "uuid.uuid1",
    "uuid.uuid4",
}
BANNED_MODULES = ("random", "secrets")


def _ruff() -> str:
    found = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not os.access(found, os.X_OK):
        pytest.fail("ruff is not installed next to this Python; install the test extra: pip install -e '.[test]'")
    return found


def test_ruff_banned_api_rule_passes_on_adk_core() -> None:
    result = subprocess.run(
        [_ruff(), "check", "--no-cache", "--select", "TID251", "adk_core"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_banned_api_rule_catches_a_violation() -> None:
    """The rule above must be able to fail: lint a violating source as if it lived in adk_core."""
    result = subprocess.run(
        [_ruff(), "check", "--no-cache", "--select", "TID251", "--stdin-filename", "adk_core/probe.py", "-"],
        cwd=ROOT,
        input="import time\n\nNOW = time.time()\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "time.time" in result.stdout, result.stdout


def violations(source: str, *, allow_clock: bool = False) -> list[str]:
    """What in ``source`` bypasses the runtime seam: temporalio imports always; the clock, uuid
    and random unless ``allow_clock``."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> fully qualified name
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
                found += _check_module(alias.name, node.lineno, allow_clock)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += _check_module(node.module, node.lineno, allow_clock)
            for alias in node.names:
                qualified = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = qualified
                if not allow_clock and qualified in BANNED_CALLS:
                    found.append(f"line {node.lineno}: imports {qualified}")
    if allow_clock:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = _dotted(node, aliases)
            if name in BANNED_CALLS:
                found.append(f"line {node.lineno}: uses {name}")
    return found


def _check_module(module: str, lineno: int, allow_clock: bool) -> list[str]:
    top = module.split(".")[0]
    if top == "temporalio":
        return [f"line {lineno}: imports {module}"]
    if not allow_clock and top in BANNED_MODULES:
        return [f"line {lineno}: imports {module}"]
    return []


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import temporalio.workflow", "imports temporalio.workflow"),
        ("from temporalio import workflow", "imports temporalio"),
        ("import time\nt = time.time()", "uses time.time"),
        ("import time as _t\nt = _t.time_ns()", "uses time.time_ns"),
        ("from time import time", "imports time.time"),
        ("from datetime import datetime\nd = datetime.now()", "uses datetime.datetime.now"),
        ("import datetime\nd = datetime.datetime.utcnow()", "uses datetime.datetime.utcnow"),
        ("import uuid\nu = uuid.uuid4()", "uses uuid.uuid4"),
        ("from uuid import uuid4 as make", "imports uuid.uuid4"),
        ("import random", "imports random"),
        ("from random import choice", "imports random"),
        ("import secrets", "imports secrets"),
    ],
)
def test_the_ast_check_catches(source: str, expected: str) -> None:
    assert any(expected in v for v in violations(source)), violations(source)


def test_the_ast_check_allows_what_is_fine() -> None:
    assert violations("import time\nt = time.perf_counter()\nimport uuid\nu = uuid.UUID(int=1)") == []
    assert violations("import time\nt = time.time()", allow_clock=True) == []
    assert violations("import temporalio", allow_clock=True) != []


def _adk_core_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30, "adk_core not found where expected"
    return files


def test_adk_core_keeps_to_the_seam() -> None:
    problems = []
    for path in _adk_core_files():
        relative = path.relative_to(ROOT).as_posix()
        allowed = relative.startswith(ALLOWED)
        problems += [f"{relative} {v}" for v in violations(path.read_text(), allow_clock=allowed)]
    assert problems == [], "adk_core must use ctx.runtime.now()/new_id()/random():\n" + "\n".join(problems)


# --- a custom runtime decides every id and timestamp ---------------------------------------------
class FixedRuntime(LocalRuntime):
    def __init__(self) -> None:
        self._ticks = itertools.count()
        self._ids = itertools.count()

    def now(self) -> float:
        return 1_000.0 + next(self._ticks)

    def new_id(self) -> str:
        return f"id-{next(self._ids)}"

    def random(self) -> float:
        return 0.5


async def _w1_turn_with(runtime: FixedRuntime) -> list[Event]:
    sessions = InMemorySessionService(clock=runtime.now, id_factory=runtime.new_id)
    runner = Runner(app=App(name="w1", root_agent=w1.build_agent()), session_service=sessions, runtime=runtime)
    session = await sessions.create_session(app_name="w1", user_id="u")
    events = [e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=Content.user(w1.USER_MESSAGE))]
    w1.check_turn(events)
    stored = await sessions.get_session(app_name="w1", user_id="u", session_id=session.id)
    assert stored is not None
    return stored.events


async def test_a_custom_runtime_determines_ids_and_timestamps() -> None:
    first = await _w1_turn_with(FixedRuntime())
    second = await _w1_turn_with(FixedRuntime())
    assert [e.model_dump() for e in first] == [e.model_dump() for e in second]
    assert len(first) == 8  # user message + 4 model events + 3 tool-response events
    ids = [e.id for e in first]
    assert all(i.startswith("id-") for i in ids) and len(set(ids)) == len(ids)
    assert {e.invocation_id for e in first} == {first[0].invocation_id}
    assert first[0].invocation_id.startswith("e-id-")
    call_ids = [c.id for e in first for c in e.function_calls()]
    assert all(c and c.startswith("adk-id-") for c in call_ids)
    timestamps = [e.timestamp for e in first]
    assert all(1_000.0 <= t < 1_100.0 for t in timestamps) and timestamps == sorted(timestamps)
