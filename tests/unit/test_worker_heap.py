"""A worker process freezes its startup heap once, so full garbage collections skip it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from adk_temporal import worker


class Node:
    """One object in a reference cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def unfrozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    gc.unfreeze()
    monkeypatch.setattr(worker, "_heap_frozen", False)
    yield
    gc.unfreeze()  # leave the test process as other tests expect it


def test_the_startup_heap_is_frozen_once(unfrozen: None) -> None:
    worker.freeze_startup_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # the modules and objects loaded so far

    later = weakref.ref(Node())
    worker.freeze_startup_heap()  # a second worker in the same process freezes nothing more
    assert gc.get_freeze_count() == frozen
    gc.collect()
    assert later() is None  # cycles made after the freeze are still collected


def test_garbage_present_at_startup_is_collected_not_frozen(unfrozen: None) -> None:
    gc.disable()  # so only the freeze's own collection can reclaim the cycle
    try:
        garbage = weakref.ref(Node())
        assert garbage() is not None
        worker.freeze_startup_heap()
        assert garbage() is None
    finally:
        gc.enable()
