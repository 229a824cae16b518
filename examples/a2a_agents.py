"""Two apps talking A2A, durably: a front desk that hands prime questions to a specialist served
over A2A.

    adkt dev --app examples.a2a_agents:specialist --app examples.a2a_agents:app   # Temporal, Postgres, a worker
    adkt a2a a2a_specialist --port 8001      # in another terminal: the specialist over A2A (card, JSON-RPC)
    adkt run a2a_front "Is 91 prime?"        # the front desk's RemoteA2aAgent asks it, in activities
    python -m examples.a2a_agents "Is 97 prime?"   # or the front desk in-process, against the same server

``adkt a2a`` serves an app with the a2a-sdk's own server: each A2A context is a durable
conversation of the specialist, and the A2A message id is the turn's idempotency key. The front
desk reaches it through ``RemoteA2aAgent``: in a durable run the send and each poll of the remote
task are ``adk.run_tool`` activities (heartbeats, bounded retries), and the message id is the call's
idempotency key, so a worker that dies mid-task is replaced without asking the specialist twice
(docs/tools.md, "A2A"). Both models are scripted, so it runs without an API key.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from datetime import timedelta

from adk_core import App, InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.a2a import RemoteA2aAgent
from adk_core.models import function_call_response, text_response, tool_responses_this_turn


def is_prime(n: int) -> dict[str, object]:
    """Whether n is prime, and its smallest factor when it is not."""
    factor = next((d for d in range(2, int(n**0.5) + 1) if n % d == 0), None)
    return {"n": n, "prime": n > 1 and factor is None, "factor": factor}


def _specialist_script(request: LlmRequest) -> LlmResponse:
    """Stands in for a real model: read the number, call is_prime, answer from its result."""
    done = tool_responses_this_turn(request)
    if done:
        r = done[-1]
        return text_response(f"{r['n']} is prime." if r["prime"] else f"{r['n']} is not prime: {r['factor']} divides it.")
    asked = next((c.text for c in reversed(request.contents) if c.role == "user" and c.text), "")
    numbers = re.findall(r"\d+", asked)
    return function_call_response("is_prime", {"n": int(numbers[-1])}) if numbers else text_response("Which number?")


specialist = App(
    name="a2a_specialist",
    root_agent=LlmAgent(name="prime_specialist", model=ScriptedModel(_specialist_script), tools=[is_prime],
                        description="Says whether a number is prime."),
)  # fmt: skip


def _front_script(request: LlmRequest) -> LlmResponse:
    if tool_responses_this_turn(request):
        return text_response("Asked the prime specialist.")
    return function_call_response("transfer_to_agent", {"agent_name": "prime_checker"})


prime_checker = RemoteA2aAgent(
    name="prime_checker",
    agent_card=os.environ.get("A2A_SPECIALIST_URL", "http://127.0.0.1:8001/"),
    description="Answers whether a number is prime (a remote agent, over A2A).",
    # Called where each request is made (the worker): the token never enters a workflow's history.
    headers=lambda: {"Authorization": f"Bearer {os.environ.get('A2A_TOKEN', 'dev-token')}"},
    poll_interval=timedelta(seconds=0.5),
)
app = App(
    name="a2a_front",
    root_agent=LlmAgent(name="front_desk", model=ScriptedModel(_front_script), sub_agents=[prime_checker],
                        instruction="Hand questions about primes to prime_checker."),
)  # fmt: skip


async def main(question: str) -> None:
    events = await InMemoryRunner(app=app).run(question)
    print(events[-1].text)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Is 91 prime?"))
