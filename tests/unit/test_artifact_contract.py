"""The artifact activity's input: one discriminated union over ``op``, each op with exactly its fields,
on the same flat JSON as before (inputs scheduled by running workflows still parse)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from adk_core.artifacts import InMemoryArtifactService
from adk_core.sessions import InMemorySessionService
from adk_core.types import Part
from adk_temporal.activities import contracts as c
from adk_temporal.activities.adk_activities import AdkActivities
from adk_temporal.workflows.converter import adk_data_converter

KEY = c.SessionKey(app_name="a", user_id="u", session_id="s")
converter = adk_data_converter.payload_converter


def _round_trip(call: c.ArtifactOpBase) -> tuple[dict, c.ArtifactCallInput]:
    payload = converter.to_payload(c.ArtifactCallInput(call))  # type: ignore[arg-type]
    return json.loads(payload.data), converter.from_payload(payload, c.ArtifactCallInput)


@pytest.mark.parametrize(
    "call",
    [
        c.SaveArtifact(key=KEY, filename="f", artifact=Part(text="hi")),
        c.SaveArtifact(key=KEY, filename="f", artifact=Part(text="hi"), save_id="save-1"),
        c.LoadArtifact(key=KEY, filename="f", version=2),
        c.ListArtifacts(key=KEY),
        c.DeleteArtifact(key=KEY, filename="f"),
        c.ListArtifactVersions(key=KEY, filename="f"),
    ],
)
def test_each_op_travels_as_flat_json_and_comes_back_as_its_own_type(call):
    data, back = _round_trip(call)
    assert data["op"] == call.op and data["key"] == KEY.model_dump()
    assert back.root == call and type(back.root) is type(call)


def test_inputs_in_the_old_single_model_shape_still_parse():
    old = {"key": KEY.model_dump(), "op": "load", "filename": "f", "artifact": None, "version": None}
    parsed = c.ArtifactCallInput.model_validate(old).root
    assert parsed == c.LoadArtifact(key=KEY, filename="f")
    assert c.ArtifactCallInput.model_validate({"key": KEY.model_dump(), "op": "list"}).root == c.ListArtifacts(key=KEY)


def test_an_op_without_its_fields_cannot_be_built():
    with pytest.raises(ValidationError, match="artifact"):
        c.SaveArtifact(key=KEY, filename="f")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="filename"):
        c.ArtifactCallInput.model_validate({"key": KEY.model_dump(), "op": "delete"})
    with pytest.raises(ValidationError, match="rename"):
        c.ArtifactCallInput.model_validate({"key": KEY.model_dump(), "op": "rename", "filename": "f"})


async def test_the_activity_runs_each_op_and_refuses_an_empty_filename_for_good():
    activities = AdkActivities(InMemorySessionService(), artifact_service=InMemoryArtifactService())
    env = ActivityEnvironment()

    async def call(op: c.ArtifactOpBase) -> c.ArtifactCallResult:
        return await env.run(activities.artifact_call, c.ArtifactCallInput(op))  # type: ignore[arg-type]

    assert (await call(c.SaveArtifact(key=KEY, filename="f", artifact=Part(text="v0")))).version == 0
    assert (await call(c.SaveArtifact(key=KEY, filename="f", artifact=Part(text="v1")))).version == 1
    assert (await call(c.LoadArtifact(key=KEY, filename="f", version=0))).artifact == Part(text="v0")
    assert (await call(c.ListArtifacts(key=KEY))).names == ["f"]
    assert (await call(c.ListArtifactVersions(key=KEY, filename="f"))).versions == [0, 1]
    await call(c.DeleteArtifact(key=KEY, filename="f"))
    assert (await call(c.LoadArtifact(key=KEY, filename="f"))).artifact is None
    # A retried save carries its save id: it gets the version the first attempt stored.
    retried = c.SaveArtifact(key=KEY, filename="f", artifact=Part(text="once"), save_id="save-1")
    assert [(await call(retried)).version for _ in range(2)] == [0, 0]
    assert (await call(c.ListArtifactVersions(key=KEY, filename="f"))).versions == [0]
    with pytest.raises(ApplicationError, match="needs a filename") as refused:
        await call(c.DeleteArtifact(key=KEY, filename=""))
    assert refused.value.non_retryable
