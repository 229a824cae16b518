"""The agent tree: names, parents, lookup, model inheritance, and which transfer targets a model is offered."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import InMemoryRunner, LlmAgent, LlmRequest, ScriptedModel, SequentialAgent
from adk_core.errors import ConfigurationError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from tests.scenarios import user_said


def _leaf(name: str, **kwargs: Any) -> LlmAgent:
    return LlmAgent(name=name, description=f"{name} agent", model=ScriptedModel(lambda r: text_response(name)), **kwargs)


@pytest.mark.parametrize("name", ["1st", "has space", "dash-name", "", "user", 42, None])
def test_invalid_names_are_refused_with_advice(name: object) -> None:
    with pytest.raises(ConfigurationError) as info:
        LlmAgent(name=name, model="gemini-2.5-flash")  # type: ignore[arg-type]
    message = str(info.value)
    assert "reserved" in message if name == "user" else "letters, digits and underscores" in message


def test_duplicate_names_in_a_tree_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="'helper' appears twice"):
        LlmAgent(
            name="root",
            model="gemini-2.5-flash",
            sub_agents=[_leaf("helper"), SequentialAgent(name="pipe", sub_agents=[_leaf("helper")])],
        )
    with pytest.raises(ConfigurationError, match="'root' appears twice"):
        LlmAgent(name="root", model="gemini-2.5-flash", sub_agents=[_leaf("root")])


def test_a_sub_agent_has_one_parent() -> None:
    shared = _leaf("shared")
    first = LlmAgent(name="first", model="gemini-2.5-flash", sub_agents=[shared])
    with pytest.raises(ConfigurationError, match="'shared' already has parent 'first'.*second instance"):
        LlmAgent(name="second", model="gemini-2.5-flash", sub_agents=[shared])
    assert shared.parent_agent is first


def test_find_agent_and_root() -> None:
    deep = _leaf("deep")
    mid = SequentialAgent(name="mid", sub_agents=[deep])
    root = LlmAgent(name="root", model="gemini-2.5-flash", sub_agents=[mid, _leaf("side")])
    assert root.find_agent("root") is root
    assert root.find_agent("deep") is deep and root.find_sub_agent("deep") is deep
    assert root.find_sub_agent("root") is None
    assert root.find_agent("nobody") is None
    assert deep.root_agent is root and root.root_agent is root
    assert [a.name for a in root.walk()] == ["root", "mid", "deep", "side"]


def test_model_is_inherited_from_the_nearest_llm_ancestor() -> None:
    model = ScriptedModel(lambda r: text_response("x"))
    child = LlmAgent(name="child")
    pipe = SequentialAgent(name="pipe", sub_agents=[child])
    LlmAgent(name="root", model=model, sub_agents=[pipe])
    assert child.canonical_model is model
    own = ScriptedModel(lambda r: text_response("own"))
    assert LlmAgent(name="solo", model=own).canonical_model is own


async def test_inherited_model_answers_for_the_child() -> None:
    def script(request: LlmRequest) -> Any:
        if 'internal name is "child"' in (request.config.system_instruction or ""):
            return text_response("child here")
        return function_call_response("transfer_to_agent", {"agent_name": "child"})

    model = ScriptedModel(script)
    root = LlmAgent(name="root", model=model, sub_agents=[LlmAgent(name="child")])
    events = await InMemoryRunner(root).run("hi")
    assert (events[-1].author, events[-1].text) == ("child", "child here")
    assert len(model.requests) == 2


async def test_running_an_agent_without_any_model_fails_clearly() -> None:
    runner = InMemoryRunner(SequentialAgent(name="pipe", sub_agents=[LlmAgent(name="child")]))
    with pytest.raises(ConfigurationError, match="'child' has no model and no ancestor LlmAgent has one"):
        await runner.run("hi")


def test_missing_model_error_says_how_to_fix() -> None:
    with pytest.raises(ConfigurationError) as info:
        _ = LlmAgent(name="lonely").canonical_model
    assert "'lonely' has no model" in str(info.value) and "model='gemini-2.5-flash'" in str(info.value)


# --- transfer targets, as the model sees them ----------------------------------------------------
def _transfer_tree() -> tuple[LlmAgent, dict[str, LlmAgent]]:
    def route(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):  # the transfer was refused
            return text_response("staying")
        return function_call_response("transfer_to_agent", {"agent_name": user_said(request)})

    agents = {
        "no_parent": _leaf("no_parent", disallow_transfer_to_parent=True),
        "no_peers": _leaf("no_peers", disallow_transfer_to_peers=True),
        "plain": _leaf("plain"),
        "isolated": _leaf("isolated", disallow_transfer_to_parent=True, disallow_transfer_to_peers=True),
    }
    root = LlmAgent(name="coordinator", model=ScriptedModel(route), sub_agents=list(agents.values()))
    return root, agents


def _transfer_declaration(request: LlmRequest) -> list[str] | None:
    for declaration in request.config.tools:
        if declaration.name == "transfer_to_agent":
            assert declaration.parameters is not None
            return declaration.parameters["properties"]["agent_name"]["enum"]
    return None


async def _request_seen_by(name: str) -> tuple[LlmRequest, LlmRequest]:
    root, agents = _transfer_tree()
    events = await InMemoryRunner(root).run(name, session_id=name)
    assert events[-1].author == name, [e.author for e in events]
    return root.model.requests[0], agents[name].model.requests[0]  # type: ignore[union-attr]


async def test_root_offers_all_its_sub_agents() -> None:
    root_request, _ = await _request_seen_by("plain")
    assert _transfer_declaration(root_request) == ["no_parent", "no_peers", "plain", "isolated"]
    assert "Your parent agent is" not in root_request.config.system_instruction


async def test_plain_sub_agent_offers_parent_and_peers() -> None:
    _, request = await _request_seen_by("plain")
    assert _transfer_declaration(request) == ["coordinator", "no_parent", "no_peers", "isolated"]
    assert "Your parent agent is coordinator" in request.config.system_instruction


async def test_disallow_transfer_to_parent_removes_the_parent() -> None:
    _, request = await _request_seen_by("no_parent")
    assert _transfer_declaration(request) == ["no_peers", "plain", "isolated"]
    assert "Your parent agent is" not in request.config.system_instruction


async def test_disallow_transfer_to_peers_removes_the_peers() -> None:
    _, request = await _request_seen_by("no_peers")
    assert _transfer_declaration(request) == ["coordinator"]


async def test_a_leaf_with_no_targets_gets_no_transfer_tool() -> None:
    _, request = await _request_seen_by("isolated")
    assert _transfer_declaration(request) is None
    assert request.config.tools == [] and "transfer_to_agent" not in request.tools_dict
    assert "other agents to transfer to" not in request.config.system_instruction


async def test_a_single_agent_gets_no_transfer_tool() -> None:
    agent = _leaf("alone")
    await InMemoryRunner(agent).run("hi")
    assert _transfer_declaration(agent.model.requests[0]) is None  # type: ignore[union-attr]


async def test_transfer_to_a_target_not_offered_is_an_error_response() -> None:
    root, _ = _transfer_tree()
    events = await InMemoryRunner(root).run("stranger")
    responses = [r.response for e in events for r in e.function_responses()]
    assert "cannot transfer to 'stranger'; choose one of: no_parent" in responses[0]["error"]
    assert events[-1].text == "staying" and not any(e.actions.transfer_to_agent for e in events)
