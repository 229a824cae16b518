"""The README's "Write an app" snippet runs as written, with no model key (issue #10 item 10)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from adk_core import InMemoryRunner
from adkt.commands._apps import load_app

README = Path(__file__).resolve().parents[3] / "README.md"


def snippet() -> str:
    section = README.read_text().split("## Write an app\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_the_snippet_answers_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADK_MODEL", raising=False)
    (tmp_path / "weather").mkdir()
    (tmp_path / "weather" / "agent.py").write_text(snippet())
    monkeypatch.chdir(tmp_path)
    try:
        app = load_app("weather/agent.py")  # as `adkt run weather/agent.py ...` loads it
    finally:
        sys.modules.pop("agent", None)  # a top-level module named after the file; not for other tests
    events = asyncio.run(InMemoryRunner(app=app).run("What is the weather in Paris?"))
    assert events[-1].text == "It is sunny and 21°C in Paris."
