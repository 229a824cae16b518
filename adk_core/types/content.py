"""Content and Part: the messages exchanged with models, in the shape Google's ADK uses."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import InvalidInputError

MAX_INLINE_DATA_SIZE = 10 * 1024 * 1024
"""Inline blobs above 10 MB are refused: store them as artifacts and pass a file_data reference."""


class _Model(BaseModel):
    # extra="forbid" turns typos into errors instead of silently dropped data.
    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


class Blob(_Model):
    """Bytes sent inline. JSON carries them as base64."""

    mime_type: str
    data: bytes
    display_name: str | None = None

    def __init__(self, **data: Any) -> None:
        # pydantic wraps a ValueError raised inside a validator in a ValidationError; checking here
        # first makes direct construction (and Part.from_bytes) raise the documented InvalidInputError.
        # Validating dicts or JSON still rejects, as a ValidationError carrying the same message.
        _check_inline_size(data.get("data"))
        super().__init__(**data)

    @field_validator("data")
    @classmethod
    def _cap_size(cls, data: bytes) -> bytes:
        _check_inline_size(data)
        return data


def _check_inline_size(data: object) -> None:
    if isinstance(data, bytes | bytearray) and len(data) > MAX_INLINE_DATA_SIZE:
        raise InvalidInputError(
            f"inline data is {len(data)} bytes, over the {MAX_INLINE_DATA_SIZE}-byte limit; "
            "save it as an artifact (tool_context.save_artifact) and send a file_data reference instead"
        )


class FileData(_Model):
    """A reference to bytes stored elsewhere (a URI the model or an artifact store can read)."""

    mime_type: str | None = None
    file_uri: str
    display_name: str | None = None


class FunctionCall(_Model):
    """A model's request to run a tool. ``id`` pairs it with its FunctionResponse."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class FunctionResponse(_Model):
    """A tool's result, sent back to the model under the same ``id`` as the call."""

    name: str
    response: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    will_continue: bool | None = None


class Part(_Model):
    """One piece of a message. Exactly one of the payload fields is set."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: bytes | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None

    @classmethod
    def from_text(cls, text: str) -> Part:
        return cls(text=text)

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> Part:
        return cls(inline_data=Blob(mime_type=mime_type, data=data))

    @classmethod
    def from_function_call(cls, name: str, args: dict[str, Any], id: str | None = None) -> Part:
        return cls(function_call=FunctionCall(name=name, args=args, id=id))

    @classmethod
    def from_function_response(cls, name: str, response: dict[str, Any], id: str | None = None) -> Part:
        return cls(function_response=FunctionResponse(name=name, response=response, id=id))


class Content(_Model):
    """A message: who said it (``user`` or ``model``) and its parts."""

    role: Literal["user", "model"] | None = None
    parts: list[Part] = Field(default_factory=list)

    @classmethod
    def user(cls, text: str) -> Content:
        return cls(role="user", parts=[Part(text=text)])

    @classmethod
    def model(cls, text: str) -> Content:
        return cls(role="model", parts=[Part(text=text)])

    @property
    def text(self) -> str:
        """The concatenated text of the non-thought parts ("" when there is none)."""
        return "".join(p.text for p in self.parts if p.text and not p.thought)

    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    def function_responses(self) -> list[FunctionResponse]:
        return [p.function_response for p in self.parts if p.function_response is not None]
