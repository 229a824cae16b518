"""`adkt dev --reload` drops the project's own modules before importing the app again, never the
packages installed in a venv beside the app (a second adk_core beside the running one)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from adkt.commands._reload import forget_modules


def test_a_reload_forgets_the_projects_code_and_keeps_a_venv_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reload_agent_probe.py").write_text("VALUE = 1\n")
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "reload_lib_probe").mkdir(parents=True)
    (site / "reload_lib_probe" / "__init__.py").write_text("VALUE = 2\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("reload_agent_probe")
    importlib.import_module("reload_lib_probe")
    try:
        dropped = forget_modules([tmp_path])
        assert "reload_agent_probe" in dropped and "reload_agent_probe" not in sys.modules
        assert "reload_lib_probe" not in dropped and "reload_lib_probe" in sys.modules
    finally:
        sys.modules.pop("reload_agent_probe", None)
        sys.modules.pop("reload_lib_probe", None)
