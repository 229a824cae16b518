"""The shared scenarios through the durable runtime (SessionWorkflow on a real dev server, sessions
in real Postgres), compared event for event with the in-process runtime."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

from adk_core import App, Content, Event, Session
from tests.integration.conftest import DurableStack
from tests.scenarios import SCENARIOS, comparable
from tests.unit.core.test_scenarios_local import LocalDriver

pytestmark = pytest.mark.integration


class DurableDriver:
    """Runs a scenario through SessionWorkflow. App names get a unique suffix per run, so
    scenarios never meet sessions of an earlier run."""

    def __init__(self, stack: DurableStack) -> None:
        self.stack = stack
        self.suffix = uuid.uuid4().hex[:6]
        self.initial_state: dict[tuple[str, str, str], dict[str, Any] | None] = {}

    def _name(self, app: str) -> str:
        return f"{app}_{self.suffix}"

    def register(self, app: App) -> None:
        self.stack.register(App(name=self._name(app.name), root_agent=app.root_agent, plugins=app.plugins))

    async def create_session(self, app: str, user_id: str, session_id: str, state: dict[str, Any] | None = None) -> None:
        await self.stack.sessions.create_session(app_name=self._name(app), user_id=user_id, session_id=session_id, state=state)

    async def send(
        self, app: str, user_id: str, session_id: str, message: Content | str, *, max_llm_calls: int = 500
    ) -> list[Event]:
        try:
            result = await self.stack.client.send(self._name(app), user_id, session_id, message, max_llm_calls=max_llm_calls)
        except WorkflowUpdateFailedError as e:
            raise RuntimeError(str(e.cause)) from e.cause
        return result.events

    async def get_session(self, app: str, user_id: str, session_id: str) -> Session:
        session = await self.stack.sessions.get_session(app_name=self._name(app), user_id=user_id, session_id=session_id)
        assert session is not None
        return session


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_matches_in_process(name: str, durable_stack: DurableStack) -> None:
    local_log = await SCENARIOS[name](LocalDriver())
    durable_log = await SCENARIOS[name](DurableDriver(durable_stack))
    assert comparable(durable_log) == comparable(local_log)
