"""Support desk: a coordinator hands each question to a specialist, or to a drafting pipeline.

    coordinator                 routes; answers only what nobody else can
    ├── billing                 lookup_invoice(invoice_id)
    ├── tech                    check_status(service)
    └── triage_pipeline         SequentialAgent
        ├── drafter             writes a reply, kept in state as "draft"
        └── reviewer            reads {draft}, answers with the final reply

Models: set ADK_MODEL (e.g. "gemini-2.5-flash", "claude-sonnet-4-5", "gpt-4o-mini") and every agent
uses that model. Without it, each agent gets a ScriptedModel: a function of the request (never a
position in a list), so it answers the same in any process, e.g. a Temporal worker that retries.

    python -m examples.support_desk            # two turns, printed compactly
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from typing import Any

from adk_core import App, Event, InMemoryRunner, LlmAgent, LlmRequest, ScriptedModel, SequentialAgent
from adk_core.models import LlmResponse, function_call_response, text_response

INVOICES = {
    "INV-42": {"status": "shipped", "amount_eur": 120.0, "tracking": "TRK-9001"},
    "INV-43": {"status": "awaiting payment", "amount_eur": 75.5, "tracking": None},
}
SERVICES = {"api": "up", "web": "up", "email": "degraded"}


def lookup_invoice(invoice_id: str) -> dict:
    """Look up an invoice by its id, such as INV-42."""
    invoice = INVOICES.get(invoice_id.strip().upper())
    if invoice is None:
        return {"error": f"no invoice {invoice_id!r}; invoice ids look like INV-42"}
    return {"invoice_id": invoice_id.strip().upper(), **invoice}


def check_status(service: str) -> dict:
    """Check whether a service (api, web or email) is up."""
    name = service.strip().lower()
    if name not in SERVICES:
        return {"error": f"unknown service {service!r}; known services: {', '.join(SERVICES)}"}
    return {"service": name, "status": SERVICES[name]}


# --- scripted models: functions of the request ---------------------------------------------------
def user_words(request: LlmRequest) -> str:
    """The customer's latest message (other agents' turns, retold as "For context:", are skipped)."""
    for content in reversed(request.contents):
        first = content.parts[0].text if content.parts else None
        if content.role == "user" and first and first != "For context:":
            return content.text
    return ""


def results_since_user(request: LlmRequest, tool: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for content in reversed(request.contents):
        first = content.parts[0].text if content.parts else None
        if content.role == "user" and first and first != "For context:":
            break
        found[:0] = [r.response for r in content.function_responses() if r.name == tool]
    return found


def route(words: str) -> str | None:
    """Which agent a message belongs to."""
    lowered = words.lower()
    if re.search(r"\binv-\d+|invoice|bill|refund|payment", lowered):
        return "billing"
    if re.search(r"\b(api|web|email|service|status|down|outage)\b", lowered):
        return "tech"
    if re.search(r"\b(draft|write|reply|complain|complaint)\b", lowered):
        return "triage_pipeline"
    return None


def _transfer(agent: str) -> LlmResponse:
    return function_call_response("transfer_to_agent", {"agent_name": agent})


def coordinator_script(request: LlmRequest) -> LlmResponse:
    target = route(user_words(request))
    if target is None:
        return text_response("I can help with invoices, service status, or drafting a reply. What do you need?")
    return _transfer(target)


def billing_script(request: LlmRequest) -> LlmResponse:
    words = user_words(request)
    target = route(words)
    if target not in ("billing", None):
        return _transfer(target)  # a follow-up comes straight here; hand over what is not ours
    results = results_since_user(request, "lookup_invoice")
    if results:
        found = results[-1]
        if "error" in found:
            return text_response(f"I could not find that invoice ({found['error']}).")
        tracking = f", tracking number {found['tracking']}" if found["tracking"] else ""
        return text_response(
            f"Invoice {found['invoice_id']} is {found['status']} ({found['amount_eur']:.2f} EUR){tracking}."
        )
    match = re.search(r"inv-\d+", words, re.IGNORECASE)
    if match is None:
        return text_response("Which invoice is it? Invoice ids look like INV-42.")
    return function_call_response("lookup_invoice", {"invoice_id": match.group().upper()})


def tech_script(request: LlmRequest) -> LlmResponse:
    words = user_words(request)
    target = route(words)
    if target not in ("tech", None):
        return _transfer(target)
    results = results_since_user(request, "check_status")
    if results:
        found = results[-1]
        if "error" in found:
            return text_response(f"I could not check that ({found['error']}).")
        return text_response(f"The {found['service']} is {found['status']}.")
    service = next((s for s in SERVICES if re.search(rf"\b{s}\b", words.lower())), None)
    if service is None:
        return text_response(f"Which service do you mean: {', '.join(SERVICES)}?")
    return function_call_response("check_status", {"service": service})


def drafter_script(request: LlmRequest) -> LlmResponse:
    return text_response(f"Thank you for your message ({user_words(request)!r}). We are looking into it.")


def reviewer_script(request: LlmRequest) -> LlmResponse:
    match = re.search(r"DRAFT: (.*)", request.config.system_instruction or "")
    draft = match.group(1).strip() if match else ""
    return text_response(f"{draft} Kind regards, the support team.")


# --- the agents ----------------------------------------------------------------------------------
def build_app(model_name: str | None = None) -> App:
    """The support desk. ``model_name`` for every agent, or None for the scripted models."""

    def model(script: Callable[[LlmRequest], LlmResponse], name: str) -> Any:
        return model_name or ScriptedModel(script, name=f"support-desk-{name}")

    billing = LlmAgent(
        name="billing",
        description="Answers questions about invoices, payments and refunds.",
        model=model(billing_script, "billing"),
        instruction="You handle invoices. Look invoices up with lookup_invoice before answering; be brief.",
        tools=[lookup_invoice],
    )
    tech = LlmAgent(
        name="tech",
        description="Answers whether our services (api, web, email) are up.",
        model=model(tech_script, "tech"),
        instruction="You handle service status. Check with check_status before answering; be brief.",
        tools=[check_status],
    )
    drafter = LlmAgent(
        name="drafter",
        model=model(drafter_script, "drafter"),
        instruction="Draft a short, friendly reply to the customer's message. Answer with the draft only.",
        output_key="draft",
    )
    reviewer = LlmAgent(
        name="reviewer",
        model=model(reviewer_script, "reviewer"),
        instruction="Review the draft below, fix tone and mistakes, and answer with the final reply only.\nDRAFT: {draft}",
    )
    pipeline = SequentialAgent(
        name="triage_pipeline",
        description="Drafts and reviews a written reply to a customer's complaint or request.",
        sub_agents=[drafter, reviewer],
    )
    coordinator = LlmAgent(
        name="coordinator",
        description="The support desk's front door.",
        model=model(coordinator_script, "coordinator"),
        instruction=(
            "You are the support desk. Transfer invoice and payment questions to billing, service status "
            "questions to tech, and requests for a written reply to triage_pipeline."
        ),
        sub_agents=[billing, tech, pipeline],
    )
    return App(name="support_desk", root_agent=coordinator)


app = build_app(os.environ.get("ADK_MODEL") or None)


def describe(event: Event) -> str:
    """One line per event: who, and what they said, called or got back."""
    lines = []
    for call in event.function_calls():
        lines.append(f"{event.author} -> {call.name}({call.args})")
    for response in event.function_responses():
        lines.append(f"{event.author} <- {response.name}: {response.response}")
    if event.text:
        lines.append(f"{event.author}: {event.text}")
    return "\n".join(lines) or f"{event.author}: (state {event.actions.state_delta})"


async def main() -> None:
    runner = InMemoryRunner(app=app)
    for message in ["Where is my invoice INV-42?", "Is the api up?"]:
        print(f"user: {message}")
        for event in await runner.run(message, user_id="customer", session_id="desk"):
            print("  " + describe(event).replace("\n", "\n  "))


if __name__ == "__main__":
    asyncio.run(main())
