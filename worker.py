"""``python worker.py --app module:attr`` is ``adkt worker --app module:attr``.

A thin script: the library code (``build_worker``, ``AdkWorker``, the entry point) lives in
``adk_temporal.worker``, which is what an installed distribution ships; this file is not installed.
"""

from adk_temporal.worker import main

if __name__ == "__main__":
    main()
