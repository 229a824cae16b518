"""The shared scenarios (tests/scenarios.py) through the in-process runtime."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import App, Content, Event, RunConfig, Runner, Session
from adk_core.artifacts import InMemoryArtifactService
from adk_core.memory import InMemoryMemoryService
from adk_core.sessions import InMemorySessionService
from tests.scenarios import SCENARIOS


class LocalDriver:
    def __init__(self) -> None:
        self.sessions = InMemorySessionService()
        self.runners: dict[str, Runner] = {}

    def register(self, app: App) -> None:
        self.runners[app.name] = Runner(
            app=app,
            session_service=self.sessions,
            artifact_service=InMemoryArtifactService(),
            memory_service=InMemoryMemoryService(),
        )

    async def create_session(self, app: str, user_id: str, session_id: str, state: dict[str, Any] | None = None) -> None:
        await self.sessions.create_session(app_name=app, user_id=user_id, session_id=session_id, state=state)

    async def send(
        self, app: str, user_id: str, session_id: str, message: Content | str, *, max_llm_calls: int = 500
    ) -> list[Event]:
        content = Content.user(message) if isinstance(message, str) else message
        runner = self.runners[app]
        return [
            e
            async for e in runner.run_async(
                user_id=user_id, session_id=session_id, new_message=content, run_config=RunConfig(max_llm_calls=max_llm_calls)
            )
        ]

    async def get_session(self, app: str, user_id: str, session_id: str) -> Session:
        session = await self.sessions.get_session(app_name=app, user_id=user_id, session_id=session_id)
        assert session is not None
        return session


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str) -> None:
    await SCENARIOS[name](LocalDriver())
