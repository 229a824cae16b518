"""adk-temporal's Temporal layers, installed under one namespace so they never take a user's names.

    adk_temporal.workflows    the repository's top-level workflows/ (workflow definitions)
    adk_temporal.activities   the repository's top-level activities/ (activities and the app registry)
    adk_temporal.worker       building and running workers (``build_worker``, ``AdkWorker``)

Temporal's own samples call a user's files ``workflows.py``, ``activities.py`` and ``worker.py``; a
project laid out that way imports its own modules by those names, and the CLI puts the project folder
first on ``sys.path``. So nothing this distribution installs is called ``workflows``, ``activities``
or ``worker``: in the repository the folders keep their top-level places (symlinked here), and every
import of them, ours and users', goes through ``adk_temporal``. ``adk_core`` (the engine) and ``adkt``
(the CLI and client) keep their own top-level names: they name this product, not a role in a project.
"""
