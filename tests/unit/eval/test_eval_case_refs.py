"""Finding eval cases by import reference (what workers and the CLI do), registering their apps,
and the names a durable trial stores its sessions under."""

from __future__ import annotations

from pathlib import Path

import pytest

from adk_core import AgentExecution, LlmAgent
from adk_core.errors import ConfigurationError
from adk_core.eval import EvalCase, case_apps
from adk_core.ids import MAX_ID_LENGTH
from adk_core.tools.agent_tool import AgentTool
from adk_temporal.activities.apps import AppRegistry
from adk_temporal.activities.eval_cases import find_case, load_cases, normalize_ref, register_case
from adk_temporal.workflows._eval_host import storage_app_name, uses_child_workflows
from examples.eval_chest_pain import build_case, chest_pain_case

MODULE = """
from adk_core import LlmAgent
from adk_core.eval import EvalCase

agent = LlmAgent(name="a", model="gemini-2.5-flash")
one = EvalCase("{prefix}-one", app_or_agent=agent, first_message="hi")
two = EvalCase("{prefix}-two", app_or_agent=agent, first_message="hi")
twice = [one, EvalCase("{prefix}-one", app_or_agent=agent, first_message="again")]
not_cases = [1, 2]
"""


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    name = f"evalrefs_{request.node.name[:30]}"
    (tmp_path / f"{name}.py").write_text(MODULE.replace("{prefix}", name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path / f"{name}.py"


def test_module_attr_module_and_cases_list() -> None:
    assert load_cases("examples.eval_chest_pain:chest_pain_case") == [chest_pain_case]
    assert load_cases("examples.eval_chest_pain") == [chest_pain_case]  # its `cases` list
    assert find_case("examples.eval_chest_pain:cases", "chest-pain-escalation") is chest_pain_case


def test_a_module_without_cases_gives_every_case_in_it(module_dir: Path) -> None:
    module = module_dir.stem
    assert [c.name for c in load_cases(module)] == [f"{module}-one", f"{module}-two"]


def test_a_file_path_becomes_a_module_name(module_dir: Path) -> None:
    assert normalize_ref(f"{module_dir.name}:one") == f"{module_dir.stem}:one"
    assert [c.name for c in load_cases(str(module_dir))] == [f"{module_dir.stem}-one", f"{module_dir.stem}-two"]


@pytest.mark.parametrize(
    ("attr", "message"),
    [("missing", "has no attribute 'missing'"), ("twice", "case names must be unique"),
     ("not_cases", "point at an EvalCase or a list of EvalCases")],
)
def test_bad_references_say_what_is_wrong(module_dir: Path, attr: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_cases(f"{module_dir.stem}:{attr}")


def test_a_list_checked_once_is_found_by_name_and_listed_again_when_it_changes(module_dir: Path) -> None:
    import importlib

    module = importlib.import_module(module_dir.stem)
    ref = f"{module_dir.stem}:many"
    agent = LlmAgent(name="a", model="gemini-2.5-flash")
    module.many = [EvalCase(f"c{i}", app_or_agent=agent, first_message="hi") for i in range(3)]
    listed = load_cases(ref)
    assert find_case(ref, "c2") is module.many[2] and find_case(ref, "c0") is module.many[0]
    listed.append(listed[0])  # a caller's copy: the cases found by name are the module's
    assert [c.name for c in load_cases(ref)] == ["c0", "c1", "c2"]
    module.many.append(EvalCase("c3", app_or_agent=agent, first_message="hi"))  # longer: listed again
    assert find_case(ref, "c3") is module.many[3]
    module.many = [EvalCase("c0", app_or_agent=agent, first_message="new"), EvalCase("c0", app_or_agent=agent,
                   first_message="twice")]  # fmt: skip
    with pytest.raises(ConfigurationError, match="case names must be unique"):  # another list: checked again
        find_case(ref, "c0")
    module.many = (EvalCase("only", app_or_agent=agent, first_message="hi"),)
    with pytest.raises(ConfigurationError, match="no case named 'c1'"):
        find_case(ref, "c1")


def test_missing_module_and_case() -> None:
    with pytest.raises(ConfigurationError, match="cannot import eval cases 'no_such_module_x:cases'"):
        load_cases("no_such_module_x:cases")
    with pytest.raises(ConfigurationError, match="no case named 'nope'"):
        find_case("examples.eval_chest_pain", "nope")


def test_registering_twice_is_a_no_op_and_a_namesake_is_refused() -> None:
    registry = AppRegistry()
    apps = register_case(chest_pain_case, registry)
    assert register_case(chest_pain_case, registry) is apps
    assert registry.get("eval:chest-pain-escalation") is case_apps(chest_pain_case).system
    with pytest.raises(ConfigurationError, match="already serves a different eval case named 'chest-pain-escalation'"):
        register_case(build_case(model=None), registry)


def test_storage_names_are_per_trial_and_fit_the_id_rule() -> None:
    assert storage_app_name("eval:c", "r1", 2) == "eval:c@r1/2"
    long = storage_app_name("eval:" + "x" * 240, "run", 0)
    assert len(long) <= MAX_ID_LENGTH and long != storage_app_name("eval:" + "x" * 240, "run", 1)


def test_child_workflow_agents_are_found_in_tools_and_sub_agents() -> None:
    child = LlmAgent(name="child", model="m", execution=AgentExecution(child_workflow=True))
    assert uses_child_workflows(LlmAgent(name="root", model="m", tools=[AgentTool(child)]))
    branch = LlmAgent(name="branch", model="m", execution=AgentExecution(child_workflow=True))
    assert uses_child_workflows(LlmAgent(name="root2", model="m", sub_agents=[branch]))
    assert not uses_child_workflows(EvalCase("plain", app_or_agent=LlmAgent(name="p", model="m"), first_message="x").app.root_agent)
