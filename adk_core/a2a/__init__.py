"""A2A: remote agents as sub-agents (``RemoteA2aAgent``). Needs the ``a2a`` extra:
``pip install 'adk-temporal[a2a]'``. Importing this package does not import ``a2a``; the first call does.

Serving an app over A2A is ``adkt a2a APP`` (adkt/a2a_server.py): docs/tools.md.
"""

from ._errors import A2aCallError, A2aUnavailableError
from .remote_agent import STATE_PREFIX, A2aPoll, A2aSend, RemoteA2aAgent

__all__ = ["STATE_PREFIX", "A2aCallError", "A2aPoll", "A2aSend", "A2aUnavailableError", "RemoteA2aAgent"]
