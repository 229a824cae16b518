"""No payload pass over a workflow activation or completion that cannot need one (no codec set).

temporalio walks every workflow activation it receives and every completion it sends three times
(``temporalio.bridge.worker.decode_activation`` / ``encode_completion``): the payload codec, the
external storage (our large-payload store, workflows/payload_storage.py), then the codec again for
storage references. Each walk is an async visit of the whole protobuf in Python. Without a payload
codec (no ``ADK_ENCRYPTION_KEYS``) the two codec walks change nothing: every payload comes back as it
went in. Measured on a W1 turn: 9 activations, 0.48 ms to decode and 0.58 ms to encode each, about
10 ms of the turn's CPU and as much on its path.

The storage walk does something only for a payload at or above the storage's size threshold (256 KiB)
on the way out, or a storage reference on the way in. ``install()`` swaps both functions for versions
that, when the converter has no codec, skip the walks when the message cannot hold such a payload: a
completion whose whole encoded size is below the threshold, an activation whose encoded bytes hold
none of the markers a reference carries. Otherwise they run the storage walk only, as temporalio runs
it, with the same metrics returned; with a codec they call temporalio's own functions. It relies on
private names (``_Visitor``, ``CommandAwarePayloadVisitor``, the converter's
``_external_*_payload_sequence``, the reference markers); a temporalio without them is left unchanged
(slower, not wrong), and tests/unit/test_payload_passes.py fails so the change is seen.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import temporalio.bridge.worker as bridge_worker
from temporalio.converter import DataConverter

try:
    import temporalio.converter._extstore as extstore
except ImportError:  # a temporalio that moved it: supported() is False, nothing is replaced
    extstore = None  # type: ignore[assignment]

TEMPORALIO_DECODE: Callable[..., Awaitable[Any]] | None = getattr(bridge_worker, "decode_activation", None)
TEMPORALIO_ENCODE: Callable[..., Awaitable[Any]] | None = getattr(bridge_worker, "encode_completion", None)
"""temporalio's own functions: what runs with a codec, and what the tests compare against."""


_PARAMETERS = {
    "decode_activation": ["activation", "data_converter", "decode_headers", "storage_concurrency_limit"],
    "encode_completion": ["completion", "data_converter", "encode_headers", "storage_concurrency_limit"],
}
"""The signatures the replacements take: a temporalio that calls the walks otherwise keeps its own."""


def supported() -> bool:
    """Whether this temporalio has the private names and signatures the shortcut uses."""
    originals = {"decode_activation": TEMPORALIO_DECODE, "encode_completion": TEMPORALIO_ENCODE}
    if extstore is None or any(f is None or list(inspect.signature(f).parameters) != _PARAMETERS[name]
                               for name, f in originals.items()):  # fmt: skip
        return False
    return all(
        hasattr(owner, name)
        for owner, name in (
            (bridge_worker, "_Visitor"),
            (bridge_worker, "CommandAwarePayloadVisitor"),
            (DataConverter, "_external_retrieve_payload_sequence"),
            (DataConverter, "_external_store_payload_sequence"),
            (extstore, "StorageOperationMetrics"),
            (extstore, "_REFERENCE_ENCODING"),
            (extstore, "_REFERENCE_MESSAGE_TYPE"),
            (extstore, "_REFERENCE_MARKER_KEY"),
        )
    )


def _reference_marks() -> tuple[bytes, ...]:
    return (extstore._REFERENCE_ENCODING, extstore._REFERENCE_MESSAGE_TYPE, extstore._REFERENCE_MARKER_KEY.encode())


_MARKS: tuple[bytes, ...] = _reference_marks() if supported() else ()


def install() -> bool:
    """Use the shortcut from now on, for every worker of this process (idempotent); False, and
    temporalio's own functions kept, when this temporalio lacks what it uses."""
    if not supported():
        return False
    bridge_worker.decode_activation = decode_activation
    bridge_worker.encode_completion = encode_completion
    return True


async def decode_activation(
    activation: Any, data_converter: DataConverter, decode_headers: bool, storage_concurrency_limit: int
) -> Any:
    if data_converter.payload_codec is not None:
        assert TEMPORALIO_DECODE is not None  # installed only when supported()
        return await TEMPORALIO_DECODE(activation, data_converter, decode_headers, storage_concurrency_limit)
    encoded = activation.SerializeToString()
    if not any(mark in encoded for mark in _MARKS):
        return extstore.StorageOperationMetrics()  # no reference to retrieve: the walk would change nothing
    return await _storage_pass(
        activation, data_converter._external_retrieve_payload_sequence, decode_headers, storage_concurrency_limit
    )


async def encode_completion(
    completion: Any, data_converter: DataConverter, encode_headers: bool, storage_concurrency_limit: int
) -> Any:
    if data_converter.payload_codec is not None:
        assert TEMPORALIO_ENCODE is not None  # installed only when supported()
        return await TEMPORALIO_ENCODE(completion, data_converter, encode_headers, storage_concurrency_limit)
    storage = data_converter.external_storage
    if storage is None or completion.ByteSize() < storage.payload_size_threshold:
        return extstore.StorageOperationMetrics()  # no payload can be large enough to store out of band
    return await _storage_pass(
        completion, data_converter._external_store_payload_sequence, encode_headers, storage_concurrency_limit
    )


async def _storage_pass(message: Any, storage: Any, headers: bool, concurrency_limit: int) -> Any:
    """temporalio's middle walk, as it runs it: the external storage (store or retrieve), metered."""
    metrics = extstore.StorageOperationMetrics()
    with metrics.track():
        await bridge_worker.CommandAwarePayloadVisitor(
            skip_search_attributes=True, skip_headers=not headers, concurrency_limit=concurrency_limit
        ).visit(bridge_worker._Visitor(storage), message)
    return metrics
