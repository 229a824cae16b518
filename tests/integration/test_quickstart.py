"""The README's quickstart works in-process and durably, with the same answer."""

from __future__ import annotations

import pytest

from adk_core import InMemoryRunner
from examples import quickstart
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny and 21°C in Paris."


async def test_quickstart_in_process_and_durable(durable_stack: DurableStack) -> None:
    local = await InMemoryRunner(app=quickstart.app).run(QUESTION)
    assert local[-1].text == ANSWER
    durable_stack.register(quickstart.app)
    turn = await durable_stack.client.send("quickstart", "alice", "s1", QUESTION)
    assert turn.final_text == ANSWER
