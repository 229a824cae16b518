"""What a durable run's services cannot offer is refused with an AdkError saying what to do instead
(issue 24, item 7). A NotImplementedError (or any error outside the AdkError tree) raised in a
child workflow fails its workflow task, which Temporal retries without end."""

from __future__ import annotations

import ast
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from adk_core.errors import AdkError, UnsupportedOperationError
from adk_core.sessions import InMemorySessionService, SessionService
from adk_temporal.activities import contracts as c
from adk_temporal.workflows.services import DurableSessionService
from tests.unit.structure.source_tree import modules

KEY = c.SessionKey(app_name="app", user_id="u", session_id="s")
CALLS: dict[str, Callable[[DurableSessionService], Awaitable[Any]]] = {
    "create_session": lambda s: s.create_session(app_name="app", user_id="u"),
    "list_sessions": lambda s: s.list_sessions(app_name="app"),
    "delete_session": lambda s: s.delete_session(app_name="app", user_id="u", session_id="s"),
    "delete_user": lambda s: s.delete_user(app_name="app", user_id="u"),
    "get_user_state": lambda s: s.get_user_state(app_name="app", user_id="u"),
    "get_app_state": lambda s: s.get_app_state(app_name="app"),
    "get_session of another session": lambda s: s.get_session(app_name="app", user_id="u", session_id="other"),
}


@pytest.mark.parametrize("method", sorted(CALLS))
async def test_each_method_a_durable_run_cannot_offer_raises_an_adk_error_naming_it(method: str) -> None:
    with pytest.raises(UnsupportedOperationError) as refused:
        await CALLS[method](DurableSessionService(KEY))
    assert isinstance(refused.value, AdkError)
    assert isinstance(refused.value, NotImplementedError)  # code that caught NotImplementedError still does
    message = str(refused.value)
    assert message.startswith(f"{method} is not available inside a durable run")
    assert ": " in message and len(message.split(": ", 1)[1]) > 20  # followed by what to do instead


async def test_a_store_without_app_state_says_where_to_read_it() -> None:
    class NoAppState(InMemorySessionService):
        get_app_state = SessionService.get_app_state  # the base's default: a store that keeps no app state

    with pytest.raises(UnsupportedOperationError, match="app: keys from session.state"):
        await NoAppState().get_app_state(app_name="app")


def test_code_that_runs_in_workers_raises_no_bare_not_implemented_error() -> None:
    """workflows/ and activities/ run inside workers: a bare NotImplementedError there is the
    endless-retry bug again. Raise UnsupportedOperationError (an AdkError) instead."""
    found = []
    for module in modules():
        if not module.name.startswith(("adk_temporal.workflows", "adk_temporal.activities", "adk_core.sessions")):
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                    found.append(f"{module.rel}:{node.lineno}")
    assert not found, "raise adk_core.errors.UnsupportedOperationError instead:\n" + "\n".join(found)
