"""How a worker process sets up Python's cyclic garbage collector, once, when its first worker starts.

Two changes, both measured on W1 (docs/scaling.md, "Garbage collection"):

- ``freeze_startup_heap``: what the process holds at that point (modules, apps, clients: well over a
  hundred thousand objects) is left out of every later full collection.
- ``raise_young_threshold``: the youngest generation is collected after 10,000 new container objects
  instead of Python's 700. A W1 turn allocates a few thousand; at 700 the collector ran about four
  times a turn and pushed survivors up until a full collection walked every conversation the worker
  holds. At 10,000 the collector's time per W1 turn went from 0.57 to 0.05 ms, its longest pause from
  85 ms (a full collection) to 23 ms (the middle generation).

The price is memory: conversations evicted from the worker's cache are cyclic garbage until a full
collection, and those now come later (opening 2,500 conversations with 1,000 cached: 432 MB instead of
335, and no pause over 100 ms instead of seventeen full collections of 265-395 ms; docs/scaling.md).

Both are process-wide. A process that set its own thresholds keeps them: the threshold is raised only
while it is still Python's default, and ``ADK_GC_YOUNG_THRESHOLD`` sets another value (``0`` leaves
Python's thresholds as they are).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping

from adk_core.errors import ConfigurationError

YOUNG_THRESHOLD_ENV = "ADK_GC_YOUNG_THRESHOLD"
YOUNG_THRESHOLD = 10_000
PYTHON_DEFAULT_THRESHOLDS = (700, 10, 10)
"""CPython's thresholds from 3.8 to 3.13; an interpreter with other defaults (3.14 changed how the
collector works) is left alone unless the environment asks."""

_prepared = False


def prepare_worker_heap() -> None:
    """Freeze the startup heap and raise the young generation's threshold; once per process, so a
    second worker in the same process changes nothing."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    raise_young_threshold()
    freeze_startup_heap()


def freeze_startup_heap() -> None:
    """Keep what the process holds now out of the cyclic collector from then on (``gc.freeze``).

    Every full collection walks every tracked object. With the startup heap that took 110-120 ms on
    the bench machine, a pause that lands on whichever turn is running. Frozen, the startup heap is
    skipped and full collections walk only what the worker made since. Done after a collection, so
    nothing already garbage is frozen; reference counting still frees frozen objects that are dropped.
    """
    gc.collect()
    gc.freeze()


def raise_young_threshold(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """Set the youngest generation's threshold (module docstring); returns the thresholds in force."""
    env = os.environ if environ is None else environ
    setting = env.get(YOUNG_THRESHOLD_ENV, "").strip()
    current = gc.get_threshold()
    if not setting:
        if current == PYTHON_DEFAULT_THRESHOLDS:
            gc.set_threshold(YOUNG_THRESHOLD, *current[1:])
        return gc.get_threshold()
    try:
        young = int(setting)
    except ValueError:
        young = -1
    if young < 0:
        raise ConfigurationError(
            f"${YOUNG_THRESHOLD_ENV}={setting!r} is not a count: set it to the number of new objects "
            f"between collections of the youngest generation (default {YOUNG_THRESHOLD}), or 0 to keep "
            "Python's thresholds"
        )
    if young > 0:
        gc.set_threshold(young, *current[1:])
    return gc.get_threshold()
