"""Content, Part and Event: JSON round-trips are stable, and oversized inline data is refused."""

from __future__ import annotations

import base64
import json

import pytest
from pydantic import ValidationError

from adk_core.errors import InvalidInputError
from adk_core.types import (
    MAX_INLINE_DATA_SIZE,
    Blob,
    Content,
    Event,
    EventActions,
    EventCompaction,
    FileData,
    Part,
    ToolConfirmation,
)

RAW = bytes(range(256))  # not valid UTF-8: only survives JSON as base64


def _rich_content() -> Content:
    return Content(
        role="model",
        parts=[
            Part(text="hello"),
            Part(text="thinking", thought=True, thought_signature=b"\x00sig\xff"),
            Part.from_bytes(RAW, "application/octet-stream"),
            Part(file_data=FileData(file_uri="gs://bucket/report.pdf", mime_type="application/pdf")),
            Part.from_function_call("add", {"a": 1, "b": [2, 3], "c": {"d": None}}, id="call-1"),
            Part.from_function_response("add", {"sum": 3}, id="call-1"),
        ],
    )


def _rich_event() -> Event:
    return Event(
        id="ev-1",
        invocation_id="e-1",
        author="assistant",
        branch="fan.left",
        timestamp=1_700_000_000.25,
        content=_rich_content(),
        turn_complete=True,
        long_running_tool_ids=["call-1"],
        usage_metadata={"prompt_token_count": 3},
        custom_metadata={"k": [1, "two"]},
        actions=EventActions(
            state_delta={"count": 1, "user:name": "Ada", "nested": {"x": [1, 2]}},
            artifact_delta={"report.pdf": 2},
            transfer_to_agent="billing",
            requested_tool_confirmations={"call-1": ToolConfirmation(hint="ok?", payload={"n": 1})},
            compaction=EventCompaction(start_timestamp=1.0, end_timestamp=2.0, compacted_content=Content.model("sum")),
        ),
    )


def test_content_json_round_trip_is_equal_and_stable() -> None:
    content = _rich_content()
    dumped = content.model_dump_json()
    again = Content.model_validate_json(dumped)
    assert again == content
    assert again.model_dump_json() == dumped


def test_event_json_round_trip_is_equal_and_stable() -> None:
    event = _rich_event()
    dumped = event.model_dump_json()
    again = Event.model_validate_json(dumped)
    assert again == event
    assert again.model_dump_json() == dumped
    # Through plain JSON data too (what a store or a Temporal payload converter does).
    assert Event.model_validate(json.loads(dumped)) == event


def test_bytes_travel_as_base64() -> None:
    data = json.loads(_rich_content().model_dump_json())
    assert data["parts"][2]["inline_data"]["data"] == base64.urlsafe_b64encode(RAW).decode()
    assert data["parts"][1]["thought_signature"] == base64.urlsafe_b64encode(b"\x00sig\xff").decode()


def test_standard_base64_from_other_systems_is_read_too() -> None:
    payload = json.dumps({"inline_data": {"mime_type": "a/b", "data": base64.b64encode(RAW).decode()}})
    part = Part.model_validate_json(payload)
    assert part.inline_data is not None and part.inline_data.data == RAW


def test_unknown_fields_are_rejected_not_dropped() -> None:
    with pytest.raises(ValidationError, match="txt"):
        Part.model_validate({"txt": "typo"})


def test_inline_data_at_the_limit_is_accepted() -> None:
    part = Part.from_bytes(b"x" * MAX_INLINE_DATA_SIZE, "text/plain")
    assert part.inline_data is not None and len(part.inline_data.data) == MAX_INLINE_DATA_SIZE


@pytest.mark.parametrize(
    "build",
    [
        lambda data: Part.from_bytes(data, "application/octet-stream"),
        lambda data: Blob(mime_type="application/octet-stream", data=data),
    ],
    ids=["Part.from_bytes", "Blob"],
)
def test_inline_data_over_10mb_is_invalid_input_saying_what_to_do(build) -> None:
    with pytest.raises(InvalidInputError) as info:
        build(b"x" * (MAX_INLINE_DATA_SIZE + 1))
    message = str(info.value)
    assert str(MAX_INLINE_DATA_SIZE + 1) in message and "limit" in message
    assert "artifact" in message and "file_data" in message


def test_inline_data_over_10mb_in_json_is_rejected_with_the_same_advice() -> None:
    big = base64.b64encode(b"x" * (MAX_INLINE_DATA_SIZE + 1)).decode()
    payload = json.dumps({"role": "user", "parts": [{"inline_data": {"mime_type": "a/b", "data": big}}]})
    with pytest.raises(ValueError, match="save it as an artifact"):
        Content.model_validate_json(payload)


def test_event_final_response_rules() -> None:
    text = Event(author="a", content=Content.model("hi"))
    call = Event(author="a", content=Content(role="model", parts=[Part.from_function_call("f", {})]))
    assert text.is_final_response() and not call.is_final_response()
    assert not Event(author="a", content=Content.model("h"), partial=True).is_final_response()
    assert Event(author="a", content=call.content, long_running_tool_ids=["x"]).is_final_response()
    assert Event(author="a", actions=EventActions(skip_summarization=True)).is_final_response()
