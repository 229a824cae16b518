"""An agent inside your own Temporal workflow: triage a batch of tickets, one agent run per ticket.

TicketTriageWorkflow is an ordinary Temporal workflow; `adk_temporal.workflows.run_agent` runs the support desk
agent (examples/support_desk.py) as one durable invocation per ticket, each on its own session.
Model and tool calls are ADK activities on the same worker, so a crash mid-batch resumes at the
ticket it was on.

    python -m examples.own_workflow                   # embedded Temporal + Postgres, runs one batch
    # or, against your own Temporal and Postgres (TEMPORAL_ADDRESS, ADK_DATABASE_URL):
    #   a worker:  build_worker(client, [support_desk.app], workflows=[TicketTriageWorkflow], ...)
    #   a client:  await client.execute_workflow(TicketTriageWorkflow.run, TriageInput(...), ...)
"""

from __future__ import annotations

import asyncio
import uuid

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from adk_temporal.workflows import run_agent
    from examples import support_desk


class TriageInput(BaseModel):
    tickets: list[str]
    user_id: str = "ops"


class TriagedTicket(BaseModel):
    ticket: str
    session_id: str
    answer: str


@workflow.defn
class TicketTriageWorkflow:
    @workflow.run
    async def run(self, input: TriageInput) -> list[TriagedTicket]:
        triaged = []
        for n, ticket in enumerate(input.tickets):
            # A session per ticket, named after this workflow: no other writer shares it.
            session_id = f"{workflow.info().workflow_id}-{n}"
            result = await run_agent(support_desk.app.name, input.user_id, session_id, ticket)
            triaged.append(TriagedTicket(ticket=ticket, session_id=session_id, answer=result.final_text))
        return triaged


TRIAGE_QUEUE = "triage"


async def main() -> None:
    """Embedded Temporal and Postgres (as `adkt run` starts them), and a worker of our own beside
    the stack's: it serves the support desk app and TicketTriageWorkflow on one task queue."""
    from adk_temporal.worker import build_worker
    from adkt.commands._stack import embedded_stack
    from adkt.services import open_services
    from adkt.settings import Settings

    async with embedded_stack([], Settings.load()) as stack, open_services(stack.database_url) as services:
        client = stack.client.client
        own = build_worker(client, [support_desk.app], task_queue=TRIAGE_QUEUE, workflows=[TicketTriageWorkflow],
                           **services)  # fmt: skip
        async with own:
            tickets = ["Where is my invoice INV-42?", "Is the email service up?"]
            results = await client.execute_workflow(
                TicketTriageWorkflow.run, TriageInput(tickets=tickets), id=f"triage-{uuid.uuid4().hex[:8]}",
                task_queue=TRIAGE_QUEUE, result_type=list[TriagedTicket],
            )
        for item in results:
            print(f"{item.ticket}\n  -> {item.answer}")


if __name__ == "__main__":
    asyncio.run(main())
