"""Agents declared in YAML (adk_core.config): what loads, and errors that give file:line, field and a fix."""

from __future__ import annotations

import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from adk_core import InMemoryRunner, LlmAgent, LoopAgent, SequentialAgent
from adk_core.config import AgentConfigError, load_agent_config, load_config_app
from tests.unit.core import config_refs

REPO = Path(__file__).resolve().parents[3]
HERE = "tests.unit.core.config_refs"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_the_example_loads_with_registry_names_references_and_a_sub_agent_file() -> None:
    app = load_config_app(REPO / "examples" / "yaml_agent" / "root_agent.yaml")
    root = app.root_agent
    assert app.name == "yaml_weather" and isinstance(root, LlmAgent)
    assert [t.name for t in root.tools] == ["get_weather", "to_fahrenheit"]  # type: ignore[union-attr]
    assert root.generate_content_config is not None and root.generate_content_config.temperature == 0.2
    (advisor,) = root.sub_agents
    assert isinstance(advisor, LlmAgent) and advisor.name == "travel_advisor"
    assert advisor.tools[0] is root.tools[0]  # the parent's registry: the same tool object
    assert advisor.canonical_model is root.canonical_model  # no model of its own: the parent's


async def test_inline_and_workflow_agents_callbacks_and_code_references(tmp_path: Path) -> None:
    file = write(tmp_path, "pipeline.yaml", f"""
        agent_class: SequentialAgent
        name: pipeline
        sub_agents:
          - name: first
            model: {HERE}:MODEL
            instruction: Look things up with lookup.
            tool_registry: {HERE}:REGISTRY
            tools: [lookup, {{name: exit_loop}}]
            before_model_callbacks:
              - name: {HERE}:note_model_call
            execution: {{child_workflow: true, model_timeout: 30, model_task_queue: near-the-provider}}
          - agent_class: LoopAgent
            name: again
            max_iterations: 2
            sub_agents:
              - code: {HERE}:looped
        """)
    root = load_agent_config(file)
    assert isinstance(root, SequentialAgent)
    first, again = root.sub_agents
    assert isinstance(first, LlmAgent) and [t.name for t in first.tools] == ["lookup", "exit_loop"]  # type: ignore[union-attr]
    assert first.execution.child_workflow and first.execution.model_timeout == timedelta(seconds=30)
    assert first.execution.model_task_queue == "near-the-provider"
    assert isinstance(again, LoopAgent) and again.max_iterations == 2 and again.sub_agents == [config_refs.looped]
    config_refs.calls.clear()
    await InMemoryRunner(root, app_name="pipeline").run("go")
    assert config_refs.calls == ["before_model"]


def test_permissive_leaves_a_missing_tool_out(tmp_path: Path) -> None:
    file = write(tmp_path, "agent.yaml", f"""
        name: helper
        model: {HERE}:MODEL
        tool_registry: {HERE}:REGISTRY
        tool_validation: permissive
        tools: [lookup, send_sms]
        """)
    agent = load_agent_config(file)
    assert isinstance(agent, LlmAgent)
    assert [t.name for t in agent.tools] == ["lookup"] and agent.omitted_tools == ("send_sms",)  # type: ignore[union-attr]


def test_a_registry_passed_in_serves_files_that_name_none(tmp_path: Path) -> None:
    file = write(tmp_path, "agent.yaml", f"name: helper\nmodel: {HERE}:MODEL\ntools: [lookup]\n")
    agent = load_agent_config(file, tool_registry=config_refs.REGISTRY)
    assert [t.name for t in agent.tools] == ["lookup"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("name: a\ninstruction: [unclosed\n", 3, "not valid YAML"),
        ("- just\n- a list\n", 1, "must be a mapping of fields"),
        ("name: a\nmodle: gemini-2.5-flash\n", 2, "modle: unknown field; the fields are: agent_class, name"),
        ("description: no name\n", 1, "name: required field is missing; add it"),
        ("name: a\nagent_class: Robot\n", 2, "agent_class: Input should be 'LlmAgent'"),
        ("name: my agent\n", 1, "name: "),
        (f"name: a\ntool_registry: {HERE}:REGISTRY\ntools:\n  - lookup\n  - lookpu\n", 5,
         "tools[1]: agent 'a' asks for tools that do not exist: 'lookpu' is not in the tool registry"),
        ("name: a\ntools: [nowhere.pkg:thing]\n", 2, "no module 'nowhere'"),
        ("name: a\ngenerate_content_config:\n  temperature: 0.1\n  topk: 3\n", 4,
         "generate_content_config.topk: unknown field; the fields are: system_instruction, temperature"),
        ("name: a\nmodel: tests.unit.core.config_refs:calls\n", 2, "it must hold a Model or a model name"),
        ("agent_class: SequentialAgent\nname: a\ninstruction: hi\n", 3, "a SequentialAgent does not take 'instruction'"),
        ("name: a\nmax_iterations: 3\n", 2, "only a LoopAgent takes max_iterations"),
        ("agent_class: SequentialAgent\nname: a\nmax_iterations: 3\n", 3, "a SequentialAgent takes no max_iterations"),
        ("name: a\ninstruction: one\ntools: []\ninstruction: two\n", 4, "instruction: given twice (also on line 2)"),
        ("name: a\nexecution:\n  model_timeout: -5\n", 2, "model_timeout must be a positive timedelta"),
        ("name: a\nsub_agents:\n  - config_path: missing.yaml\n", 3, "sub_agents[0].config_path: no file"),
        ("name: a\nsub_agents:\n  - config_path: x.yaml\n    code: a:b\n", 3, "give exactly one of config_path"),
        ("name: a\nsub_agents:\n  - name: b\n    tools: [7]\n", 4, "sub_agents[0].tools[0]: write a name or"),
        ("name: a\ntools:\n  - name: my.factory:make\n    args: {size: 3}\n", 3, "tools[0]: args (google-adk"),
        ("name: a\nexecution:\n  child_workflow: true\n  retries: 3\n", 4,
         "execution.retries: unknown field; the fields are: child_workflow, model_timeout"),
    ],
)
def test_errors_name_the_file_the_line_the_field_and_a_fix(tmp_path: Path, text: str, line: int, expected: str) -> None:
    file = write(tmp_path, "agent.yaml", text)
    with pytest.raises(AgentConfigError) as raised:
        load_agent_config(file)
    assert str(raised.value).startswith(f"{file}:{line}: "), str(raised.value)
    assert expected in str(raised.value)
    assert raised.value.line == line


def test_config_files_that_include_each_other_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "name: a\nsub_agents:\n  - config_path: b.yaml\n")
    write(tmp_path, "b.yaml", "name: b\nsub_agents:\n  - config_path: a.yaml\n")
    with pytest.raises(AgentConfigError, match="include each other"):
        load_agent_config(tmp_path / "a.yaml")


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError, match="cannot read the agent config"):
        load_agent_config(tmp_path / "none.yaml")
