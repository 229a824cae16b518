"""adk_temporal.payload_passes: the payload walks it skips change nothing, the ones it keeps run as
temporalio runs them. Each case runs temporalio's own functions and ours on copies of one message
and compares the results, so a skip that loses a store or a retrieval fails here."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.bridge.proto.activity_result import ActivityResolution, Success
from temporalio.bridge.proto.workflow_activation import (
    ResolveActivity,
    WorkflowActivation,
    WorkflowActivationJob,
)
from temporalio.bridge.proto.workflow_commands import ScheduleActivity, WorkflowCommand
from temporalio.bridge.proto.workflow_completion import Success as CompletionSuccess
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    PayloadCodec,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
    WorkflowSerializationContext,
)

from adk_temporal import payload_passes

THRESHOLD = 1024


class MemoryDriver(StorageDriver):
    """Keeps stored payloads in a dict: the storage interface, not a protocol peer."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.stores = self.retrievals = 0

    def name(self) -> str:
        return "memory"

    def type(self) -> str:
        return "memory"

    async def store(self, context: StorageDriverStoreContext, values: Sequence[Payload]) -> list[StorageDriverClaim]:
        self.stores += 1
        claims = []
        for payload in values:
            key = str(len(self.data))
            self.data[key] = payload.SerializeToString()
            claims.append(StorageDriverClaim(claim_data={"key": key}))
        return claims

    async def retrieve(self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        self.retrievals += 1
        return [Payload.FromString(self.data[c.claim_data["key"]]) for c in claims]


class Tagging(PayloadCodec):
    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload(metadata={**p.metadata, "tag": b"1"}, data=p.data) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            q = Payload()
            q.CopyFrom(p)
            q.metadata.pop("tag", None)
            out.append(q)
        return out


def _converter(driver: MemoryDriver | None, codec: PayloadCodec | None = None) -> DataConverter:
    storage = ExternalStorage(drivers=[driver], payload_size_threshold=THRESHOLD) if driver else None
    converter = dataclasses.replace(DataConverter.default, external_storage=storage, payload_codec=codec)
    return converter._with_contexts(
        WorkflowSerializationContext(namespace="default", workflow_id="wf"),
        StorageDriverStoreContext(target=StorageDriverWorkflowInfo(namespace="default", id="wf", run_id="r")),
    )


def _payload(size: int) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * size + b'"')


def _completion(size: int) -> WorkflowActivationCompletion:
    command = WorkflowCommand(schedule_activity=ScheduleActivity(
        seq=1, activity_id="1", activity_type="a", task_queue="q", arguments=[_payload(size)]))  # fmt: skip
    return WorkflowActivationCompletion(run_id="r", successful=CompletionSuccess(commands=[command]))


def _activation(result: Payload) -> WorkflowActivation:
    resolve = ResolveActivity(seq=1, result=ActivityResolution(completed=Success(result=result)))
    return WorkflowActivation(run_id="r", jobs=[WorkflowActivationJob(resolve_activity=resolve)])


async def _temporalio_encode(*args: object) -> object:
    assert payload_passes.TEMPORALIO_ENCODE is not None
    return await payload_passes.TEMPORALIO_ENCODE(*args)


async def _temporalio_decode(*args: object) -> object:
    assert payload_passes.TEMPORALIO_DECODE is not None
    return await payload_passes.TEMPORALIO_DECODE(*args)


def _copy(message: WorkflowActivation) -> WorkflowActivation:
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def test_this_temporalio_has_what_the_shortcut_uses() -> None:
    assert payload_passes.supported(), "temporalio changed its payload walks: revisit adk_temporal/payload_passes.py"


def test_install_replaces_the_walks_for_every_worker_of_the_process() -> None:
    import temporalio.bridge.worker as bridge_worker

    assert payload_passes.install()
    assert bridge_worker.decode_activation is payload_passes.decode_activation
    assert bridge_worker.encode_completion is payload_passes.encode_completion


def test_a_temporalio_that_calls_the_walks_otherwise_keeps_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import temporalio.bridge.worker as bridge_worker

    async def decode(activation: object, data_converter: object, *, decode_headers: bool, limits: object) -> None:
        return None

    monkeypatch.setattr(payload_passes, "TEMPORALIO_DECODE", decode)
    monkeypatch.setattr(bridge_worker, "decode_activation", decode)
    assert not payload_passes.supported()
    assert not payload_passes.install()
    assert bridge_worker.decode_activation is decode  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("size", [10, THRESHOLD + 10])
@pytest.mark.parametrize("with_storage", [True, False])
async def test_a_completion_comes_out_as_temporalio_makes_it(size: int, with_storage: bool) -> None:
    theirs_driver, ours_driver = (MemoryDriver(), MemoryDriver()) if with_storage else (None, None)
    theirs, ours = _completion(size), _completion(size)
    await _temporalio_encode(theirs, _converter(theirs_driver), True, 1)
    metrics = await payload_passes.encode_completion(ours, _converter(ours_driver), True, 1)
    assert ours == theirs
    if with_storage:
        assert ours_driver is not None and theirs_driver is not None
        assert ours_driver.data == theirs_driver.data
        assert ours_driver.stores == (1 if size > THRESHOLD else 0)
        assert metrics.payload_count == (1 if size > THRESHOLD else 0)


async def test_an_activation_with_a_stored_payload_gets_it_back_and_one_without_is_left_alone() -> None:
    driver = MemoryDriver()
    stored = _completion(THRESHOLD + 10)
    await payload_passes.encode_completion(stored, _converter(driver), True, 1)
    reference = stored.successful.commands[0].schedule_activity.arguments[0]
    for result, retrievals in ((reference, 1), (_payload(10), 0)):
        theirs, ours = _activation(result), _activation(result)
        await _temporalio_decode(theirs, _converter(driver), True, 1)
        before = driver.retrievals
        await payload_passes.decode_activation(ours, _converter(driver), True, 1)
        assert ours == theirs
        assert driver.retrievals - before == retrievals
    assert ours.jobs[0].resolve_activity.result.completed.result == _payload(10)
    assert theirs.jobs[0].resolve_activity.result.completed.result == _payload(10)
    restored = _activation(reference)
    await payload_passes.decode_activation(restored, _converter(driver), True, 1)
    assert restored.jobs[0].resolve_activity.result.completed.result == _payload(THRESHOLD + 10)


async def test_with_a_codec_temporalio_runs_every_walk() -> None:
    theirs, ours = _completion(10), _completion(10)
    await _temporalio_encode(theirs, _converter(MemoryDriver(), Tagging()), True, 1)
    await payload_passes.encode_completion(ours, _converter(MemoryDriver(), Tagging()), True, 1)
    assert ours == theirs
    assert ours.successful.commands[0].schedule_activity.arguments[0].metadata["tag"] == b"1"
    decoded = _copy(_activation(ours.successful.commands[0].schedule_activity.arguments[0]))
    await payload_passes.decode_activation(decoded, _converter(MemoryDriver(), Tagging()), True, 1)
    assert "tag" not in decoded.jobs[0].resolve_activity.result.completed.result.metadata
