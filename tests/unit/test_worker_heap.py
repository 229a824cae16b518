"""A worker process sets up the garbage collector once: its startup heap frozen, so full collections
skip it, and the youngest generation collected less often (adk_temporal/heap.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from adk_core.errors import ConfigurationError
from adk_temporal import heap


class Node:
    """One object in a reference cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The collector as a process starts, put back afterwards as other tests expect it."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(*heap.PYTHON_DEFAULT_THRESHOLDS)
    monkeypatch.setattr(heap, "_prepared", False)
    monkeypatch.delenv(heap.YOUNG_THRESHOLD_ENV, raising=False)
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_the_startup_heap_is_frozen_once(fresh_process: None) -> None:
    heap.prepare_worker_heap()
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # the modules and objects loaded so far

    later = weakref.ref(Node())
    heap.prepare_worker_heap()  # a second worker in the same process freezes nothing more
    assert gc.get_freeze_count() == frozen
    gc.collect()
    assert later() is None  # cycles made after the freeze are still collected


def test_garbage_present_at_startup_is_collected_not_frozen(fresh_process: None) -> None:
    gc.disable()  # so only the freeze's own collection can reclaim the cycle
    try:
        garbage = weakref.ref(Node())
        assert garbage() is not None
        heap.prepare_worker_heap()
        assert garbage() is None
    finally:
        gc.enable()


def test_the_young_generation_is_collected_less_often(fresh_process: None) -> None:
    heap.prepare_worker_heap()
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)


def test_a_process_that_set_its_own_thresholds_keeps_them(fresh_process: None) -> None:
    gc.set_threshold(2_000, 5, 5)
    heap.prepare_worker_heap()
    assert gc.get_threshold() == (2_000, 5, 5)


def test_the_environment_sets_the_threshold_or_keeps_pythons(fresh_process: None) -> None:
    assert heap.raise_young_threshold({heap.YOUNG_THRESHOLD_ENV: "0"}) == heap.PYTHON_DEFAULT_THRESHOLDS
    assert heap.raise_young_threshold({heap.YOUNG_THRESHOLD_ENV: "25000"}) == (25_000, 10, 10)


@pytest.mark.parametrize("setting", ["lots", "-5", "1e4"])
def test_a_threshold_that_is_not_a_count_says_how_to_fix_it(fresh_process: None, setting: str) -> None:
    with pytest.raises(ConfigurationError, match="ADK_GC_YOUNG_THRESHOLD.*or 0 to keep Python's thresholds"):
        heap.raise_young_threshold({heap.YOUNG_THRESHOLD_ENV: setting})
    assert gc.get_threshold() == heap.PYTHON_DEFAULT_THRESHOLDS
