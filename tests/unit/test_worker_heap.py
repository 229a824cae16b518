"""A worker process freezes its startup heap once, so full garbage collections skip it, and leaves
Python's collection thresholds as they are (adk_temporal/heap.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from adk_temporal import heap


class Node:
    """One object in a reference cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The collector as a process starts, put back afterwards as other tests expect it."""
    gc.unfreeze()
    monkeypatch.setattr(heap, "_frozen", False)
    yield
    gc.unfreeze()


def test_the_startup_heap_is_frozen_once(fresh_process: None) -> None:
    heap.freeze_startup_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # the modules and objects loaded so far

    later = weakref.ref(Node())
    before = gc.get_freeze_count()
    heap.freeze_startup_heap()  # a second worker in the same process freezes nothing more
    # Not "== frozen": a frozen object freed meanwhile (by another thread too) leaves the count, and
    # a CI run once read one fewer. A second freeze would add every object made since, Node among them.
    assert gc.get_freeze_count() <= before
    gc.collect()
    assert later() is None  # cycles made after the freeze are still collected


def test_garbage_present_at_startup_is_collected_not_frozen(fresh_process: None) -> None:
    gc.disable()  # so only the freeze's own collection can reclaim the cycle
    try:
        garbage = weakref.ref(Node())
        assert garbage() is not None
        heap.freeze_startup_heap()
        assert garbage() is None
    finally:
        gc.enable()


def test_the_collection_thresholds_are_left_as_they_are(fresh_process: None) -> None:
    """A raised young threshold made full collections of 2 s under churn (heap.py says why)."""
    thresholds = gc.get_threshold()
    heap.freeze_startup_heap()
    assert gc.get_threshold() == thresholds
