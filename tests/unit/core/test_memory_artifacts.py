"""In-memory memory and artifact services, and the tools and templating that use them in a run."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import (
    Content,
    Event,
    InMemoryArtifactService,
    InMemoryMemoryService,
    InMemoryRunner,
    LlmAgent,
    LlmRequest,
    ScriptedModel,
    Session,
    ToolContext,
)
from adk_core.errors import ConfigurationError, InvalidInputError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import load_artifacts, load_memory
from adk_core.types import Part


def _session(user: str = "u", *texts: str) -> Session:
    events = [
        Event(id=f"{user}-{i}", author="user" if i % 2 == 0 else "helper", timestamp=float(i), content=Content.user(t))
        for i, t in enumerate(texts)
    ]
    return Session(id="s1", app_name="app", user_id=user, events=events)


# --- memory --------------------------------------------------------------------------------------
async def test_memory_search_matches_words_case_insensitively_per_user() -> None:
    memory = InMemoryMemoryService()
    await memory.add_session_to_memory(_session("u", "My INVOICE number is 42", "Noted.", "I like tea"))
    await memory.add_session_to_memory(_session("other", "invoice for someone else"))
    found = await memory.search_memory(app_name="app", user_id="u", query="where is my invoice?")
    assert [m.content.text for m in found.memories] == ["My INVOICE number is 42"]
    assert found.memories[0].author == "user" and found.memories[0].id == "u-0"
    assert (await memory.search_memory(app_name="app", user_id="u", query="coffee")).memories == []
    assert (await memory.search_memory(app_name="other-app", user_id="u", query="invoice")).memories == []


async def test_adding_a_session_twice_does_not_duplicate() -> None:
    memory = InMemoryMemoryService()
    session = _session("u", "the invoice is late")
    await memory.add_session_to_memory(session)
    await memory.add_session_to_memory(session)
    session.events.append(Event(id="u-9", author="user", content=Content.user("second invoice")))
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name="app", user_id="u", query="invoice")
    assert sorted(m.id for m in found.memories) == ["u-0", "u-9"]


async def test_load_memory_tool_in_a_run() -> None:
    memory = InMemoryMemoryService()
    await memory.add_session_to_memory(_session("user", "My favourite colour is teal"))

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if done:
            return text_response("; ".join(m["text"] for m in done[0]["memories"]))
        return function_call_response("load_memory", {"query": "favourite colour"})

    agent = LlmAgent(name="rememberer", model=ScriptedModel(script), tools=[load_memory])
    events = await InMemoryRunner(agent, memory_service=memory).run("what colour do I like?")
    assert events[-1].text == "My favourite colour is teal"


# --- artifacts -----------------------------------------------------------------------------------
def _where(session_id: str = "s1") -> dict[str, str]:
    return {"app_name": "app", "user_id": "u", "session_id": session_id}


async def test_artifact_versions() -> None:
    store = InMemoryArtifactService()
    assert await store.save_artifact(**_where(), filename="a.txt", artifact=Part(text="v0")) == 0
    assert await store.save_artifact(**_where(), filename="a.txt", artifact=Part(text="v1")) == 1
    assert (await store.load_artifact(**_where(), filename="a.txt")) == Part(text="v1")
    assert (await store.load_artifact(**_where(), filename="a.txt", version=0)) == Part(text="v0")
    assert await store.load_artifact(**_where(), filename="a.txt", version=5) is None
    assert await store.load_artifact(**_where(), filename="missing.txt") is None
    assert await store.list_versions(**_where(), filename="a.txt") == [0, 1]
    await store.delete_artifact(**_where(), filename="a.txt")
    assert await store.list_versions(**_where(), filename="a.txt") == []


async def test_user_scope_is_shared_across_sessions_and_session_scope_is_not() -> None:
    store = InMemoryArtifactService()
    await store.save_artifact(**_where("s1"), filename="user:profile.txt", artifact=Part(text="Ada"))
    await store.save_artifact(**_where("s1"), filename="notes.txt", artifact=Part(text="s1 only"))
    assert await store.load_artifact(**_where("s2"), filename="user:profile.txt") == Part(text="Ada")
    assert await store.load_artifact(**_where("s2"), filename="notes.txt") is None
    assert await store.list_artifact_keys(**_where("s2")) == ["user:profile.txt"]
    assert await store.list_artifact_keys(**_where("s1")) == ["notes.txt", "user:profile.txt"]
    assert await store.list_artifact_keys(app_name="app", user_id="other", session_id="s1") == []


@pytest.mark.parametrize(
    ("filename", "says"),
    [("", "empty"), ("a/b.txt", "names are flat"), ("..", "'..'"), ("a\\b", "'\\\\'"), ("a\nb", "control"), ("x" * 256, "limit is 255")],
)
async def test_bad_filenames_are_refused(filename: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        await InMemoryArtifactService().save_artifact(**_where(), filename=filename, artifact=Part(text="x"))


async def test_padded_ids_are_refused_not_stripped() -> None:
    store = InMemoryArtifactService()
    with pytest.raises(InvalidInputError, match="session id ' s1' has leading or trailing whitespace"):
        await store.save_artifact(**_where(" s1"), filename="a.txt", artifact=Part(text="x"))
    memory = InMemoryMemoryService()
    with pytest.raises(InvalidInputError, match="user id 'u ' has leading or trailing whitespace"):
        await memory.add_session_to_memory(_session("u ", "hello"))
    with pytest.raises(InvalidInputError, match="app name is empty"):
        await memory.search_memory(app_name="", user_id="u", query="hello")


async def test_size_limit_and_empty_artifacts() -> None:
    store = InMemoryArtifactService(max_artifact_bytes=10)
    await store.save_artifact(**_where(), filename="ok.bin", artifact=Part.from_bytes(b"x" * 10, "a/b"))
    with pytest.raises(InvalidInputError, match="11 bytes, over this store's 10-byte limit.*file_data"):
        await store.save_artifact(**_where(), filename="big.bin", artifact=Part.from_bytes(b"x" * 11, "a/b"))
    with pytest.raises(InvalidInputError, match="has no data"):
        await store.save_artifact(**_where(), filename="empty", artifact=Part())
    assert await store.list_artifact_keys(**_where()) == ["ok.bin"]


async def test_tool_context_save_artifact_records_the_artifact_delta() -> None:
    async def write_report(title: str, tool_context: ToolContext) -> dict:
        """Write a report."""
        first = await tool_context.save_artifact("report.txt", Part(text=f"draft {title}"))
        second = await tool_context.save_artifact("report.txt", Part(text=f"final {title}"))
        return {"versions": [first, second]}

    def script(request: LlmRequest) -> Any:
        return text_response("saved") if tool_responses_this_turn(request) else function_call_response(
            "write_report", {"title": "Q3"}
        )

    runner = InMemoryRunner(LlmAgent(name="writer", model=ScriptedModel(script), tools=[write_report]))
    events = await runner.run("write it", session_id="s")
    assert events[1].function_responses()[0].response == {"versions": [0, 1]}
    assert events[1].actions.artifact_delta == {"report.txt": 1}
    stored = await runner.artifact_service.load_artifact(app_name="app", user_id="user", session_id="s", filename="report.txt")
    assert stored == Part(text="final Q3")


async def test_load_artifacts_tool_lists_and_attaches_artifacts() -> None:
    def script(request: LlmRequest) -> Any:
        last = request.contents[-1]
        if (last.parts[0].text or "").startswith("Artifact "):
            return text_response(f"read {last.parts[1].text}")
        return function_call_response("load_artifacts", {"artifact_names": ["notes.txt", "ghost.txt"]})

    model = ScriptedModel(script)
    runner = InMemoryRunner(LlmAgent(name="reader", model=model, tools=[load_artifacts]))
    await runner.artifact_service.save_artifact(**_where("s"), filename="notes.txt", artifact=Part(text="buy milk"))
    events = await runner.run("what do my notes say?", user_id="u", session_id="s")
    assert '["notes.txt"]' in model.requests[0].config.system_instruction
    assert events[1].function_responses()[0].response == {"artifact_names": ["notes.txt"], "not_found": ["ghost.txt"]}
    attached = model.requests[1].contents[-1]
    assert [p.text for p in attached.parts] == ["Artifact notes.txt is:", "buy milk"]
    assert events[-1].text == "read buy milk"


async def test_artifact_placeholders_in_instructions() -> None:
    model = ScriptedModel(lambda r: text_response("ok"))
    agent = LlmAgent(name="a", model=model, instruction="Policy: {artifact.policy.txt}. Extra: [{artifact.extra.txt?}]")
    runner = InMemoryRunner(agent)
    await runner.artifact_service.save_artifact(**_where("s"), filename="policy.txt", artifact=Part(text="be kind"))
    await runner.run("hi", user_id="u", session_id="s")
    assert model.requests[0].config.system_instruction.startswith("Policy: be kind. Extra: []")
    with pytest.raises(ConfigurationError, match=r"\{artifact.policy.txt\} but no artifact 'policy.txt' exists"):
        await runner.run("hi", user_id="u", session_id="other")
