"""An app declared in YAML wherever the CLI takes an app (file, folder), and `adkt create --config`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adk_core import InMemoryRunner
from adk_core.config import AgentConfigError
from adk_core.errors import ConfigurationError
from adkt.commands._apps import load_app, parse_app_spec
from adkt.commands._reload import app_folders
from adkt.main import app as cli

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "yaml_agent" / "root_agent.yaml"


def test_a_yaml_file_or_a_folder_with_root_agent_yaml_is_an_app() -> None:
    spec = parse_app_spec(str(EXAMPLE))
    assert spec.loadable and spec.config_file == EXAMPLE and spec.module is None
    assert load_app(spec).name == "yaml_weather"
    assert parse_app_spec(str(EXAMPLE.parent)).config_file == EXAMPLE  # google-adk's folder layout
    assert app_folders([str(EXAMPLE)]) == [EXAMPLE.parent]  # `adkt dev --reload` watches it


def test_yaml_spec_mistakes_say_what_to_write(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        parse_app_spec(str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigurationError, match="holds one root agent; drop ':app'"):
        parse_app_spec(f"{EXAMPLE}:app")
    bad = tmp_path / "bad.yml"
    bad.write_text("name: a\nmodle: x\n")
    with pytest.raises(AgentConfigError, match=r"bad.yml:2: modle: unknown field"):
        load_app(str(bad))


def test_create_config_scaffolds_a_yaml_app_that_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["create", "--config", "tz_bot"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "tz_bot").iterdir()) == [
        "__init__.py", "root_agent.yaml", "test_agent.py", "tools.py",
    ]  # fmt: skip
    assert "adkt run tz_bot/root_agent.yaml" in result.output
    try:
        monkeypatch.delenv("ADK_MODEL", raising=False)
        app = load_app("tz_bot/")  # the folder: its root_agent.yaml
        events = asyncio.run(InMemoryRunner(app=app).run("What time is it in Tokyo?"))
        assert events[-1].text == "Tokyo is at UTC+9."
        again = CliRunner().invoke(cli, ["create", "--config", "tz_bot"])
        assert again.exit_code == 1 and "--force" in again.output
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "tz_bot"]:
            del sys.modules[name]
