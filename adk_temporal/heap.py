"""How a worker process sets up Python's cyclic garbage collector, once, when its first worker starts.

``freeze_startup_heap``: what the process holds at that point (modules, apps, clients: well over a
hundred thousand objects) is left out of every later full collection.

Python's thresholds (700, 10, 10) are left as they are, on purpose; measured at stop 44
(docs/scaling.md, "The youngest generation's threshold"). Raising the youngest generation's to 10,000
took the collector's time per W1 turn from 0.57 to 0.05 ms on one busy conversation. But a worker that
keeps evicting conversations collects their cycles only in full collections, and those then came
rarely and large: opening 10,000 conversations with 1,000 cached made 3 full collections of 1.8-2.1 s
(past temporalio's 2 s deadlock detector, which fails the workflow task caught in one) instead of 67
of 0.43-0.64 s, and held 529 MB instead of 368. Any threshold above Python's spaces full collections
further apart, and what they walk grows with the gap.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup_heap() -> None:
    """Keep what the process holds now out of the cyclic collector from then on (``gc.freeze``), once
    per process: a second worker in the same process changes nothing.

    Every full collection walks every tracked object. With the startup heap that took 110-120 ms on
    the bench machine, a pause that lands on whichever turn is running. Frozen, the startup heap is
    skipped and full collections walk only what the worker made since. Done after a collection, so
    nothing already garbage is frozen; reference counting still frees frozen objects that are dropped.
    """
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
