"""workflows/runtime.uuid4_text: the ids a workflow run makes are in its history, so the fast form must
give exactly what ``str(workflow.uuid4())`` gives from the same random state, draw after draw."""

from __future__ import annotations

import importlib
import random
import uuid

import pytest

from adk_temporal.workflows.runtime import uuid4_text


@pytest.mark.parametrize("seed", [0, 1, 2**63 + 5, 123456789])
def test_the_same_ids_as_workflow_uuid4_from_the_same_random(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    from temporalio import workflow

    theirs, ours = random.Random(seed), random.Random(seed)
    # temporalio's own uuid4, drawing from a Random of ours instead of a running workflow's.
    monkeypatch.setattr(importlib.import_module(workflow.uuid4.__module__), "random", lambda: theirs)
    for _ in range(5000):
        expected = str(workflow.uuid4())
        assert uuid4_text(ours) == expected
    assert ours.random() == theirs.random()  # the same draws were taken: later ids stay the same too


def test_a_valid_version_4_uuid() -> None:
    text = uuid4_text(random.Random(7))
    parsed = uuid.UUID(text)
    assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)
