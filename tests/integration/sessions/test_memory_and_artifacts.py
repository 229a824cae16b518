"""Memory and artifact services: shared semantics on both backends, plus what only Postgres does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from adk_core.artifacts import ArtifactService, InMemoryArtifactService
from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.errors import InvalidInputError
from adk_core.memory import InMemoryMemoryService, MemoryService
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.sessions import Session
from adk_core.types import Blob, Content, Event, FileData, Part

MAX_BYTES = 1024


@pytest_asyncio.fixture
async def memory(backend: tuple[str, str | None]) -> AsyncIterator[MemoryService]:
    kind, url = backend
    if kind == "in_memory":
        yield InMemoryMemoryService()
        return
    assert url is not None
    service = DatabaseMemoryService(url)
    yield service
    await service.close()


@pytest_asyncio.fixture
async def artifacts(backend: tuple[str, str | None]) -> AsyncIterator[ArtifactService]:
    kind, url = backend
    if kind == "in_memory":
        yield InMemoryArtifactService(max_artifact_bytes=MAX_BYTES)
        return
    assert url is not None
    service = DatabaseArtifactService(url, max_artifact_bytes=MAX_BYTES)
    yield service
    await service.close()


def session_with(app_name: str, user_id: str, session_id: str, *texts: str) -> Session:
    events = [
        Event(id=f"{session_id}-{i}", author="user", timestamp=float(i), content=Content.user(text))
        for i, text in enumerate(texts)
    ]
    return Session(id=session_id, app_name=app_name, user_id=user_id, events=events)


# --- memory --------------------------------------------------------------------------------------------


async def test_memory_finds_entries_of_one_app_and_user(memory: MemoryService, app_name: str) -> None:
    await memory.add_session_to_memory(
        session_with(app_name, "alice", "s1", "My favourite colour is turquoise", "I live in Lisbon")
    )
    await memory.add_session_to_memory(session_with(app_name, "bob", "s2", "turquoise is my colour too"))

    found = await memory.search_memory(app_name=app_name, user_id="alice", query="turquoise")
    assert [(m.id, m.author, m.content.text) for m in found.memories] == [
        ("s1-0", "user", "My favourite colour is turquoise")
    ]
    assert (await memory.search_memory(app_name=app_name, user_id="alice", query="Lisbon")).memories[
        0
    ].id == "s1-1"
    assert (await memory.search_memory(app_name=app_name, user_id="carol", query="turquoise")).memories == []
    assert (
        await memory.search_memory(app_name=app_name + "x", user_id="alice", query="turquoise")
    ).memories == []
    assert (await memory.search_memory(app_name=app_name, user_id="alice", query="volcano")).memories == []
    assert (await memory.search_memory(app_name=app_name, user_id="alice", query="  ?! ")).memories == []


async def test_memory_matches_any_word_of_a_question(memory: MemoryService, app_name: str) -> None:
    await memory.add_session_to_memory(session_with(app_name, "u", "s", "the meeting moved to Thursday"))
    found = await memory.search_memory(app_name=app_name, user_id="u", query="when is the meeting or party?")
    assert [m.id for m in found.memories] == ["s-0"]


async def test_adding_a_session_twice_does_not_duplicate(memory: MemoryService, app_name: str) -> None:
    session = session_with(app_name, "u", "s", "penguins waddle")
    await memory.add_session_to_memory(session)
    session.events.append(
        Event(id="s-1", author="model", timestamp=9.0, content=Content.model("penguins swim"))
    )
    session.events.append(Event(id="no-text", author="model", timestamp=10.0))
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name=app_name, user_id="u", query="penguins")
    assert sorted(m.id for m in found.memories) == ["s-0", "s-1"]


@pytest.mark.integration
async def test_postgres_memory_ranks_and_stems(migrated_url: str, app_name: str) -> None:
    memory = DatabaseMemoryService(migrated_url)
    try:
        await memory.add_session_to_memory(
            session_with(
                app_name, "u", "s", "hiking boots", "red boots for hiking in the mountains", "a red car"
            )
        )
        found = await memory.search_memory(app_name=app_name, user_id="u", query="red mountain hikes")
        ids = [m.id for m in found.memories]
        assert ids[0] == "s-1"  # shares the most words
        assert set(ids) == {"s-0", "s-1", "s-2"}  # any shared word matches; "hikes" finds "hiking"
    finally:
        await memory.close()


# --- artifacts ----------------------------------------------------------------------------------------------


async def test_versions_count_up_and_load(artifacts: ArtifactService, app_name: str) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    assert await artifacts.load_artifact(**keys, filename="a.txt") is None
    for i in range(3):
        assert await artifacts.save_artifact(**keys, filename="a.txt", artifact=Part(text=f"v{i}")) == i
    assert (await artifacts.load_artifact(**keys, filename="a.txt")) == Part(text="v2")
    assert (await artifacts.load_artifact(**keys, filename="a.txt", version=0)) == Part(text="v0")
    assert await artifacts.load_artifact(**keys, filename="a.txt", version=3) is None
    assert await artifacts.load_artifact(**keys, filename="a.txt", version=-1) is None
    assert await artifacts.list_versions(**keys, filename="a.txt") == [0, 1, 2]


async def test_payload_kinds_round_trip(artifacts: ArtifactService, app_name: str) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    parts = {
        "blob.bin": Part(
            inline_data=Blob(mime_type="application/octet-stream", data=bytes(range(256)), display_name="b")
        ),
        "ref.pdf": Part(file_data=FileData(file_uri="gs://bucket/ref.pdf", mime_type="application/pdf")),
        "empty.txt": Part(text=""),
    }
    for name, part in parts.items():
        await artifacts.save_artifact(**keys, filename=name, artifact=part)
    for name, part in parts.items():
        assert await artifacts.load_artifact(**keys, filename=name) == part


async def test_user_scope_is_shared_across_a_users_sessions(
    artifacts: ArtifactService, app_name: str
) -> None:
    await artifacts.save_artifact(
        app_name=app_name,
        user_id="u",
        session_id="s1",
        filename="user:profile.json",
        artifact=Part(text="{}"),
    )
    await artifacts.save_artifact(
        app_name=app_name, user_id="u", session_id="s1", filename="notes.txt", artifact=Part(text="n")
    )
    loaded = await artifacts.load_artifact(
        app_name=app_name, user_id="u", session_id="s2", filename="user:profile.json"
    )
    assert loaded == Part(text="{}")
    assert (
        await artifacts.load_artifact(app_name=app_name, user_id="u", session_id="s2", filename="notes.txt")
        is None
    )
    assert await artifacts.list_artifact_keys(app_name=app_name, user_id="u", session_id="s1") == [
        "notes.txt",
        "user:profile.json",
    ]
    assert await artifacts.list_artifact_keys(app_name=app_name, user_id="u", session_id="s2") == [
        "user:profile.json"
    ]
    assert await artifacts.list_artifact_keys(app_name=app_name, user_id="other", session_id="s1") == []


async def test_delete_removes_every_version(artifacts: ArtifactService, app_name: str) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s", "filename": "d.txt"}
    for i in range(2):
        await artifacts.save_artifact(**keys, artifact=Part(text=str(i)))
    await artifacts.delete_artifact(**keys)
    assert await artifacts.list_versions(**keys) == []
    assert await artifacts.load_artifact(**keys) is None
    assert await artifacts.save_artifact(**keys, artifact=Part(text="again")) == 0


@pytest.mark.parametrize("filename", ["", "  ", "a/b.txt", "..", "x\\y", "bad\x00name", "n" * 300])
async def test_bad_filenames_are_refused(artifacts: ArtifactService, app_name: str, filename: str) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    with pytest.raises(InvalidInputError):
        await artifacts.save_artifact(**keys, filename=filename, artifact=Part(text="x"))
    with pytest.raises(InvalidInputError):
        await artifacts.load_artifact(**keys, filename=filename)
    assert await artifacts.list_artifact_keys(**keys) == []


async def test_oversized_and_empty_artifacts_are_refused_before_writing(
    artifacts: ArtifactService, app_name: str
) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s", "filename": "big.bin"}
    with pytest.raises(InvalidInputError, match=f"over this store's {MAX_BYTES}-byte limit"):
        await artifacts.save_artifact(
            **keys, artifact=Part.from_bytes(b"x" * (MAX_BYTES + 1), "application/octet-stream")
        )
    with pytest.raises(InvalidInputError, match="has no data"):
        await artifacts.save_artifact(**keys, artifact=Part())
    assert await artifacts.list_versions(**keys) == []
    assert await artifacts.save_artifact(**keys, artifact=Part.from_bytes(b"x" * MAX_BYTES, "a/b")) == 0


async def test_concurrent_saves_get_distinct_versions(artifacts: ArtifactService, app_name: str) -> None:
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s", "filename": "race.txt"}
    versions = await asyncio.gather(
        *(artifacts.save_artifact(**keys, artifact=Part(text=str(i))) for i in range(30))
    )
    assert sorted(versions) == list(range(30))
    assert await artifacts.list_versions(**keys) == list(range(30))
    # Each version holds what the save that got that number wrote.
    for i, version in enumerate(versions):
        assert await artifacts.load_artifact(**keys, version=version) == Part(text=str(i))


async def test_a_repeated_save_id_returns_the_version_it_stored(artifacts: ArtifactService, app_name: str) -> None:
    """A durable run's save activity may be retried after its first attempt committed: the retry
    carries the same save id and must get that version back, not store another."""
    keys = {"app_name": app_name, "user_id": "u", "session_id": "s", "filename": "r.txt"}
    assert await artifacts.save_artifact(**keys, artifact=Part(text="first"), save_id="save-1") == 0
    assert await artifacts.save_artifact(**keys, artifact=Part(text="first"), save_id="save-1") == 0
    assert await artifacts.list_versions(**keys) == [0]
    assert await artifacts.save_artifact(**keys, artifact=Part(text="second"), save_id="save-2") == 1
    assert await artifacts.save_artifact(**keys, artifact=Part(text="third")) == 2  # no id: always a new version
    assert await artifacts.save_artifact(**keys, artifact=Part(text="third")) == 3
    assert await artifacts.save_artifact(**keys, artifact=Part(text="again"), save_id="save-1") == 0
    assert await artifacts.list_versions(**keys) == [0, 1, 2, 3]
    assert await artifacts.load_artifact(**keys, version=0) == Part(text="first")
    # Save ids belong to one filename; a user-scoped name's are shared by the user's sessions.
    other = {**keys, "filename": "other.txt"}
    assert await artifacts.save_artifact(**other, artifact=Part(text="o"), save_id="save-1") == 0
    shared = {**keys, "filename": "user:shared.txt"}
    assert await artifacts.save_artifact(**shared, artifact=Part(text="s"), save_id="save-3") == 0
    assert await artifacts.save_artifact(**{**shared, "session_id": "s2"}, artifact=Part(text="s"), save_id="save-3") == 0
    assert await artifacts.list_versions(**shared) == [0]
    # Repeats racing each other store one version and all get its number.
    raced = await asyncio.gather(
        *(artifacts.save_artifact(**keys, artifact=Part(text="raced"), save_id="save-4") for _ in range(10))
    )
    assert raced == [4] * 10 and await artifacts.list_versions(**keys) == [0, 1, 2, 3, 4]
    # Deleting the artifact forgets its saves: the same id stores anew.
    await artifacts.delete_artifact(**keys)
    assert await artifacts.save_artifact(**keys, artifact=Part(text="new"), save_id="save-1") == 0
    assert await artifacts.load_artifact(**keys) == Part(text="new")


async def test_a_session_called_user_keeps_its_names_to_itself(artifacts: ArtifactService, app_name: str) -> None:
    """User-scoped names live in a pseudo-session called "user"; a real session may have that id
    too, and its own names must not show up in the user's other sessions."""
    keys = {"app_name": app_name, "user_id": "u"}
    await artifacts.save_artifact(**keys, session_id="user", filename="mine.txt", artifact=Part(text="m"))
    await artifacts.save_artifact(**keys, session_id="s2", filename="user:shared.txt", artifact=Part(text="s"))
    assert await artifacts.list_artifact_keys(**keys, session_id="s2") == ["user:shared.txt"]
    assert await artifacts.list_artifact_keys(**keys, session_id="user") == ["mine.txt", "user:shared.txt"]
    assert await artifacts.load_artifact(**keys, session_id="s2", filename="mine.txt") is None


# --- the id rule ---------------------------------------------------------------------------------------------

BAD_IDS = ["", " u", "u ", "a\nb", "nul\x00", "x" * 257, 3]


@pytest.mark.parametrize("bad", BAD_IDS, ids=lambda v: repr(v)[:12])
async def test_memory_refuses_bad_ids(memory: MemoryService, app_name: str, bad: Any) -> None:
    good = session_with(app_name, "u", "s", "penguins")
    for field in ("app_name", "user_id", "id"):
        with pytest.raises(InvalidInputError):
            await memory.add_session_to_memory(good.model_copy(update={field: bad}))
    for app, user in ((bad, "u"), (app_name, bad)):
        with pytest.raises(InvalidInputError):
            await memory.search_memory(app_name=app, user_id=user, query="penguins")
    assert (await memory.search_memory(app_name=app_name, user_id="u", query="penguins")).memories == []


@pytest.mark.parametrize("bad", BAD_IDS, ids=lambda v: repr(v)[:12])
async def test_artifacts_refuse_bad_ids_before_writing(artifacts: ArtifactService, app_name: str, bad: Any) -> None:
    ops: list[Callable[[dict[str, Any]], Awaitable[object]]] = [
        lambda k: artifacts.save_artifact(**k, filename="a.txt", artifact=Part(text="x")),
        lambda k: artifacts.save_artifact(**k, filename="user:a.txt", artifact=Part(text="x")),
        lambda k: artifacts.load_artifact(**k, filename="a.txt"),
        lambda k: artifacts.list_artifact_keys(**k),
        lambda k: artifacts.list_versions(**k, filename="a.txt"),
        lambda k: artifacts.delete_artifact(**k, filename="a.txt"),
    ]
    for keys in (
        {"app_name": bad, "user_id": "u", "session_id": "s"},
        {"app_name": app_name, "user_id": bad, "session_id": "s"},
        {"app_name": app_name, "user_id": "u", "session_id": bad},
    ):
        for op in ops:
            with pytest.raises(InvalidInputError):
                await op(keys)
    good = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    assert await artifacts.list_artifact_keys(**good) == []


async def test_memory_finds_a_word_with_an_apostrophe(memory: MemoryService, app_name: str) -> None:
    """Encrypted at rest, the query was split at the apostrophe while the entry's words were not."""
    await memory.add_session_to_memory(session_with(app_name, "u", "s", "Ask O'Brien about the invoice"))
    found = await memory.search_memory(app_name=app_name, user_id="u", query="O'Brien")
    assert [m.id for m in found.memories] == ["s-0"]
