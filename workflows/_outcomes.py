"""The finished turns a conversation's run keeps, for repeated message ids and clients following a turn.

Each turn is kept as its JSON (``bytes``, which Python's cyclic garbage collector does not track), the
newest few also as objects. Kept as objects, a run's turns (about 120 tracked objects per W1 turn)
lived until the run continued as new and were then freed only by a full collection, with the rest of
the old run: on one worker, 0.46 ms of collector time a W1 turn and a 46 ms pause every 200 turns;
kept as JSON, 0.25 ms and a 22 ms pause every 400 (bench/README.md, "stop 42"). Nothing a workflow
task does depends on the form, so histories replay as before.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_core import to_json

    from .contracts import TurnOutcome

FRESH_OUTCOMES = 2
"""The newest turns also kept as objects: their senders are answered from these, without a decode."""


_OUTCOME_FIELDS = ("message_id", "result", "error_type", "error_message", "failed_events", "failed_events_omitted")
_SPLICEABLE = tuple(TurnOutcome.model_fields) == _OUTCOME_FIELDS
"""Whether ``outcome_json`` knows TurnOutcome's fields: a field added since makes it encode in full."""


def outcome_json(outcome: TurnOutcome, result_json: bytes | None = None) -> bytes:
    """The bytes our payload converter would send for ``outcome`` (None fields left out: they default
    to None). A successful turn's is spliced from its result's JSON (``result_json``, which the turn
    computed to measure and send its result), without encoding the turn's events a second time."""
    if (
        result_json is None or not _SPLICEABLE or outcome.result is None
        or outcome.error_type is not None or outcome.error_message is not None
        or outcome.failed_events or outcome.failed_events_omitted
    ):
        return to_json(outcome, exclude_none=True)
    return b'{"message_id":%s,"result":%s,"failed_events":[],"failed_events_omitted":0}' % (
        to_json(outcome.message_id), result_json,
    )


class KeptOutcomes:
    """The newest ``keep`` finished turns by message id, oldest first (a repeated id keeps its place)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._json: OrderedDict[str, bytes] = OrderedDict()
        self._fresh: OrderedDict[str, TurnOutcome] = OrderedDict()

    def add(self, outcome: TurnOutcome, result_json: bytes | None = None) -> None:
        """Keep ``outcome``; ``result_json``: its result's JSON, when the caller has it already."""
        message_id = outcome.message_id
        self._json[message_id] = outcome_json(outcome, result_json)
        self._fresh[message_id] = outcome
        self._fresh.move_to_end(message_id)
        while len(self._fresh) > FRESH_OUTCOMES:
            self._fresh.popitem(last=False)
        while len(self._json) > self._keep:
            dropped, _ = self._json.popitem(last=False)
            self._fresh.pop(dropped, None)

    def __contains__(self, message_id: str) -> bool:
        return message_id in self._json

    def get(self, message_id: str) -> TurnOutcome | None:
        data = self._json.get(message_id)
        return None if data is None else self._read(message_id, data)

    def newest(self, count: int, budget: int) -> list[TurnOutcome]:
        """The newest ``count`` turns, oldest first, as many of them as fit in ``budget`` bytes of JSON
        (taken newest first)."""
        taken: list[TurnOutcome] = []
        for message_id, data in itertools.islice(reversed(self._json.items()), count):
            budget -= len(data)
            if budget < 0:
                break
            taken.append(self._read(message_id, data))
        taken.reverse()
        return taken

    def _read(self, message_id: str, data: bytes) -> TurnOutcome:
        return self._fresh.get(message_id) or TurnOutcome.model_validate_json(data)
