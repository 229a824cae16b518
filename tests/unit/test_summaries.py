"""The one-line summaries ADK workflows and activities show in the Temporal UI, and the hint for
a namespace without the ADK search attributes."""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

from adk_core.flow.contents import CONTEXT_HEADER, build_contents
from adk_core.models.base import LlmRequest
from adk_core.types import Content, Event, Part
from adk_temporal.workflows.summaries import (
    SUMMARY_CHARS,
    model_call_summary,
    run_summary,
    session_details,
    snippet,
    turn_details,
)
from adkt.search_attributes import SearchAttributesMissingError, create_command, missing_error


def test_snippet_is_one_line_and_cut_with_an_ellipsis() -> None:
    assert snippet("  Where is\nmy   invoice?  ") == "Where is my invoice?"
    cut = snippet("word " * 40, limit=20)
    assert len(cut) == 20 and cut.endswith("…") and "\n" not in cut


def test_model_call_summary_names_the_agent_what_was_asked_and_the_model() -> None:
    asked = LlmRequest(contents=[Content.model("earlier"), Content.user("Where is my invoice " + "please " * 20)])
    summary = model_call_summary("support_agent", "gemini-2.5-flash", asked, None)
    assert summary.startswith("support_agent: Where is my invoice please")
    assert summary.endswith("… (gemini-2.5-flash)")

    after_tool = LlmRequest(contents=[Content(role="user", parts=[Part.from_function_response("get_invoice", {})])])
    assert model_call_summary("a", "m", after_tool, None) == "a: result of get_invoice (m)"
    approved = Content(role="user", parts=[Part.from_function_response("adk_request_confirmation", {"confirmed": True})])
    assert model_call_summary("a", "m", LlmRequest(contents=[approved]), None) == "a: confirmation: approved (m)"
    # Nothing new in the request (all of it sent by reference): the invocation's message.
    assert model_call_summary("a", "m", LlmRequest(), Content.user("hi")) == "a: hi (m)"
    assert len(model_call_summary("a" * 500, "m", LlmRequest(), None)) == SUMMARY_CHARS


def test_run_and_turn_texts() -> None:
    assert run_summary("shop", "u1", "s1", Content.user("hi")) == "shop · user u1 · session s1: hi"
    assert turn_details(3, Content.user("hi"), "done") == "**Turn 3** (done)  \n**Last message** hi"


def test_a_missing_search_attribute_is_explained_with_the_command() -> None:
    refused = RPCError("Namespace prod has no mapping defined for search attribute AdkApp", RPCStatusCode.INVALID_ARGUMENT, b"")
    explained = missing_error(refused, "prod")
    assert isinstance(explained, SearchAttributesMissingError)
    assert create_command("prod") in str(explained)
    assert create_command("prod") == (
        "temporal operator search-attribute create --namespace prod --name AdkApp --type Keyword --name AdkUser --type Keyword"
    )
    other = RPCError("Namespace prod has no mapping defined for search attribute Other", RPCStatusCode.INVALID_ARGUMENT, b"")
    assert missing_error(other, "prod") is None
    assert missing_error(RPCError("AdkApp search attribute", RPCStatusCode.UNAVAILABLE, b""), "prod") is None


def test_a_transferred_agents_model_call_is_summarised_from_the_users_words() -> None:
    """The request a transferred agent's model gets ends with the first agent's turn retold as
    context ("For context: ..."); its summary quotes what the user asked instead."""
    asked = Event(id="e1", invocation_id="i", author="user", content=Content.user("Where is my invoice from May?"))
    transfer = Event(id="e2", invocation_id="i", author="router",
                     content=Content(role="model", parts=[Part.from_function_call("transfer_to_agent", {"agent_name": "billing"})]))  # fmt: skip
    moved = Event(id="e3", invocation_id="i", author="router", content=Content(role="user", parts=[
        Part.from_function_response("transfer_to_agent", {"transferred_to": "billing"})]))  # fmt: skip
    contents = build_contents([asked, transfer, moved], "billing", None)
    assert contents[-1].parts[0].text == CONTEXT_HEADER  # what the summary used to quote
    summary = model_call_summary("billing", "gemini-2.5-flash", LlmRequest(contents=contents), None)
    assert summary == "billing: Where is my invoice from May? (gemini-2.5-flash)"
    # Only context sent (the rest by reference): the invocation's message.
    only_context = LlmRequest(contents=contents[1:])
    assert model_call_summary("billing", "m", only_context, Content.user("hi")) == "billing: hi (m)"


def test_a_conversations_details_link_to_its_dev_page() -> None:
    assert session_details("shop", "u 1", "s/1") == "**App** `shop`  \n**User** `u 1`  \n**Session** `s/1`"
    linked = session_details("shop", "u 1", "s/1", "http://127.0.0.1:8000/")
    assert linked.endswith("[Open on the dev page: timeline, events, state](http://127.0.0.1:8000/#/chat/shop/u%201/s%2F1)")
