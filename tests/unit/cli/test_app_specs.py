"""Naming an app on the command line: module:attr, a file, a file:attr, a folder, or a bare app name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from adk_core import App
from adk_core.errors import ConfigurationError
from adkt.commands._apps import load_app, parse_app_spec

AGENT = """
from adk_core import App, LlmAgent, ScriptedModel
from adk_core.models import text_response

root_agent = LlmAgent(name="{name}", model=ScriptedModel(lambda request: text_response("hi")))
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a package `shop` (shop/agent.py defines root_agent) and a loose file `solo.py`."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "agent.py").write_text(AGENT.format(name="shopper") + "\napp = App(name='shop', root_agent=root_agent)\n")
    (tmp_path / "solo.py").write_text(AGENT.format(name="solo"))
    (tmp_path / "broken.py").write_text("import json\nraise RuntimeError('boom at import')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] in ("shop", "solo", "broken")]:
        del sys.modules[name]


def test_a_file_in_a_package_is_imported_under_its_dotted_name(project: Path) -> None:
    spec = parse_app_spec("shop/agent.py")
    assert (spec.module, spec.attr, spec.search_path) == ("shop.agent", None, project.resolve())
    app = load_app(spec)
    assert isinstance(app, App) and app.name == "shop"  # `app` is preferred over `root_agent`
    assert sys.modules["shop.agent"].__file__ == str(project.resolve() / "shop" / "agent.py")


def test_a_file_without_app_uses_root_agent_and_attr_can_be_named(project: Path) -> None:
    assert load_app("solo.py").name == "solo"
    assert load_app("shop/agent.py:root_agent").name == "shopper"


def test_a_folder_means_its_agent_py(project: Path) -> None:
    assert parse_app_spec("shop").module == "shop.agent"  # a folder here wins over the package of that name
    assert parse_app_spec("shop/").module == "shop.agent"
    assert load_app("shop/").name == "shop"


def test_a_module_without_attr_and_a_bare_app_name(project: Path) -> None:
    assert load_app("shop.agent").name == "shop"
    bare = parse_app_spec("support_desk")
    assert not bare.loadable
    with pytest.raises(ConfigurationError, match="can only name an app that a running worker serves"):
        load_app(bare)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing.py", "no such file"),
        ("shop/agent.py:not a name", "is not a Python name"),
        ("shop/agent.py:nothing_here", "cannot load app 'shop/agent.py:nothing_here'"),
        ("broken.py", r"importing it failed: RuntimeError: boom at import \(.*broken.py:2\)"),
        ("nowhere.mod:app", "no module 'nowhere' here"),
    ],
)
def test_what_cannot_load_says_why(project: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_app(spec)


def test_a_file_defining_no_app_names_the_attribute_to_add(project: Path) -> None:
    (project / "empty.py").write_text("x = 1\n")
    with pytest.raises(ConfigurationError, match=r"defines neither `app` nor `root_agent`.*empty.py:my_agent"):
        load_app("empty.py")
