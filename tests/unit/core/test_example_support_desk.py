"""examples/support_desk.py, in-process with its scripted models."""

from __future__ import annotations

from adk_core import Event, InMemoryRunner, LlmAgent, ScriptedModel
from examples import support_desk
from tests.scenarios import comparable


def _transfers(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.author, e.actions.transfer_to_agent) for e in events if e.actions.transfer_to_agent]


def _results(events: list[Event]) -> list[tuple[str, dict]]:
    return [(r.name, r.response) for e in events for r in e.function_responses() if r.name != "transfer_to_agent"]


async def _two_turns() -> tuple[InMemoryRunner, list[Event], list[Event]]:
    runner = InMemoryRunner(app=support_desk.build_app())
    invoice = await runner.run("Where is my invoice INV-42?", user_id="c", session_id="desk")
    api = await runner.run("Is the api up?", user_id="c", session_id="desk")
    return runner, invoice, api


async def test_invoice_then_api_question() -> None:
    runner, invoice, api = await _two_turns()

    assert _transfers(invoice) == [("coordinator", "billing")]
    assert _results(invoice) == [
        ("lookup_invoice", {"invoice_id": "INV-42", "status": "shipped", "amount_eur": 120.0, "tracking": "TRK-9001"})
    ]
    assert (invoice[-1].author, invoice[-1].text) == (
        "billing",
        "Invoice INV-42 is shipped (120.00 EUR), tracking number TRK-9001.",
    )

    # The follow-up goes to billing (the last agent that spoke), which hands it to its peer.
    assert _transfers(api) == [("billing", "tech")]
    assert _results(api) == [("check_status", {"service": "api", "status": "up"})]
    assert (api[-1].author, api[-1].text) == ("tech", "The api is up.")
    assert all(e.is_final_response() is (e is api[-1]) for e in api)

    session = await runner.session_service.get_session(app_name="support_desk", user_id="c", session_id="desk")
    assert session is not None and len(session.events) == 2 + len(invoice) + len(api)


async def test_a_fresh_status_question_goes_through_the_coordinator() -> None:
    events = await InMemoryRunner(app=support_desk.build_app()).run("Is the email service down?")
    assert _transfers(events) == [("coordinator", "tech")]
    assert events[-1].text == "The email is degraded."


async def test_unknown_invoice_and_unknown_question() -> None:
    runner = InMemoryRunner(app=support_desk.build_app())
    missing = await runner.run("What about invoice INV-7?", session_id="a")
    assert missing[-1].text.startswith("I could not find that invoice (no invoice 'INV-7'")
    hello = await runner.run("hello", session_id="b")
    assert [(e.author, e.text) for e in hello] == [
        ("coordinator", "I can help with invoices, service status, or drafting a reply. What do you need?")
    ]


async def test_the_pipeline_drafts_then_reviews() -> None:
    runner = InMemoryRunner(app=support_desk.build_app())
    events = await runner.run("Please write a reply to my complaint", session_id="p")
    assert _transfers(events) == [("coordinator", "triage_pipeline")]
    assert [e.author for e in events][-2:] == ["drafter", "reviewer"]
    draft = "Thank you for your message ('Please write a reply to my complaint'). We are looking into it."
    assert events[-2].actions.state_delta == {"draft": draft}
    assert events[-1].text == f"{draft} Kind regards, the support team."
    session = await runner.session_service.get_session(app_name="support_desk", user_id="user", session_id="p")
    assert session is not None and session.state["draft"] == draft


async def test_scripted_answers_depend_only_on_the_request() -> None:
    _, first_invoice, first_api = await _two_turns()
    _, second_invoice, second_api = await _two_turns()
    assert comparable(first_invoice + first_api) == comparable(second_invoice + second_api)
    for agent in support_desk.build_app().root_agent.walk():
        if isinstance(agent, LlmAgent):
            assert isinstance(agent.model, ScriptedModel) and callable(agent.model._script)


def test_adk_model_names_every_agents_model() -> None:
    app = support_desk.build_app("gpt-4o-mini")
    models = {a.name: a.model for a in app.root_agent.walk() if isinstance(a, LlmAgent)}
    assert set(models) == {"coordinator", "billing", "tech", "drafter", "reviewer"}
    assert set(models.values()) == {"gpt-4o-mini"}
    assert app.name == "support_desk" and support_desk.app.name == "support_desk"
