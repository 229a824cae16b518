"""The data converter for everything adk-temporal sends through Temporal.

Temporal's pydantic converter, except that model fields holding None are left out of the JSON.
Every such field of our boundary types defaults to None, so nothing changes when the payload is
read back, and an event or a model request shrinks to a third of its size (most of their
optional fields are None). Dict entries holding None (a deleted state key, a tool result) are
kept: ``exclude_none`` applies to model fields only.

A value whose JSON is over ``MAX_PAYLOAD_BYTES`` is refused here, where it is encoded, with a
non-retryable ``PayloadTooLarge``: an activity's result fails its call (the same call would make the
same value again), and nothing encodes a result a second time just to measure it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
)

from adk_temporal.activities.contracts import MAX_PAYLOAD_BYTES, payload_too_large

_encoded: tuple[object, bytes] = (object(), b"")
"""The one value whose JSON its caller computed already (``encoded_already``), and that JSON."""


def encoded_already(value: BaseModel, data: bytes) -> None:
    """Tell the converter that ``data`` is ``to_json(value, exclude_none=True)``, computed by a caller
    that needed the bytes anyway (a turn's result is measured and kept as JSON before its update
    returns it): the next payload made of this very object sends ``data`` instead of encoding it
    again. One slot for the process, matched by identity, so a value made since, in this workflow or
    another one's thread, is simply encoded. The caller must not change ``value`` after this."""
    global _encoded
    _encoded = (value, data)


class CompactPydanticJSONConverter(PydanticJSONPlainPayloadConverter):
    def to_payload(self, value: Any) -> Payload:
        known = _encoded  # one read: another thread may replace the slot meanwhile
        data = known[1] if known[0] is value else to_json(value, exclude_none=True)
        if len(data) > MAX_PAYLOAD_BYTES:
            raise payload_too_large(len(data))
        payload = Payload(data=data)
        # Set, not passed to the constructor: a dict there goes through MutableMapping.update in
        # Python (isinstance checks the workflow sandbox slows), 2.5x the cost of this one store.
        payload.metadata["encoding"] = _ENCODING
        return payload


_COMPACT = CompactPydanticJSONConverter()
_ENCODING = _COMPACT.encoding.encode()
_CONVERTERS = tuple(
    _COMPACT if isinstance(c, JSONPlainPayloadConverter) else c
    for c in DefaultPayloadConverter.default_encoding_payload_converters
)


_PROTOTYPE = CompositePayloadConverter(*_CONVERTERS)
"""Built once by temporalio's own code: every AdkPayloadConverter shares its encoding table (read
only, as temporalio reads it) and its answer to whether a component takes a serialization context."""


class AdkPayloadConverter(CompositePayloadConverter):
    """One set of component converters for the whole process. Temporal builds a new payload
    converter for nearly every activation and activity (each time a serialization or storage
    context is applied); sharing the pydantic one shares its TypeAdapter cache, which a fresh
    instance would rebuild for every value it reads (about 60 us each). The instances share one
    encoding table too, and answer whether a component takes a serialization context (none does)
    without asking each one again (isinstance checks, which the workflow sandbox slows)."""

    _any_converter_takes_context = _PROTOTYPE._any_converter_takes_context

    def __init__(self) -> None:
        self.converters = _PROTOTYPE.converters

    def to_payloads(self, values: Sequence[Any]) -> list[Payload]:
        """A str or a pydantic model goes straight to our JSON converter, where the composite would
        get it after asking the None, bytes and two protobuf converters in turn (each an isinstance
        check, which the workflow sandbox slows): 15 values a W1 turn in the workflow (the
        activities' inputs and summaries, the turn's result), 8 in its activities. Anything else
        takes the composite's way, RawValue included."""
        payloads: list[Payload] = []
        for value in values:
            if type(value) is str or isinstance(value, BaseModel):
                payloads.append(_COMPACT.to_payload(value))
            else:
                payloads.extend(super().to_payloads((value,)))
        return payloads


adk_data_converter = DataConverter(payload_converter_class=AdkPayloadConverter)


def adk_converter(existing: DataConverter | None = None) -> DataConverter:
    """Our payload converter, keeping what ``existing`` (a client's converter) does to payloads after
    conversion: its payload codec (encryption, compression), failure converter and external storage.
    A plugin that replaced the client's converter outright would drop a user's encryption silently."""
    if existing is None:
        return adk_data_converter
    changes: dict[str, Any] = {"payload_converter_class": AdkPayloadConverter}
    if existing.payload_codec is not None and existing.failure_converter_class is DefaultFailureConverter:
        # A codec encrypts payloads, but Temporal's default failure converter writes every error's
        # message and stack trace into the history in clear (a tool's error may quote a user's data):
        # with a codec, they travel as an encoded attribute, through the codec, too.
        changes["failure_converter_class"] = DefaultFailureConverterWithEncodedAttributes
    return dataclasses.replace(existing, **changes)
