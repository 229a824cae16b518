"""What the Temporal UI shows for ADK workflows and activities: one-line summaries and details.

A conversation's workflow gets a static summary (app, user, session) when it starts and current
details (its last message and how its turn went) as it runs; a model call's activity is summarised
by its agent and what it was asked. Plain functions of their inputs, so workflow code may call them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from adk_core.flow.contents import CONTEXT_HEADER, SUMMARY_HEADER
from adk_core.models.base import LlmRequest
from adk_core.types import Content
from adk_core.types.event import REQUEST_CONFIRMATION_FUNCTION

SNIPPET_CHARS = 60
"""Quoted user text is cut to this many characters: a summary is one line in the UI's event list."""
SUMMARY_CHARS = 200
"""No summary is longer than this (long agent or app names included)."""


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def describe_content(content: Content | None) -> str:
    """A short line for a message: its text, else the tool results or calls it carries."""
    if content is None:
        return "(no message)"
    if content.text:
        return snippet(content.text)
    responses = content.function_responses()
    if responses:
        return ", ".join(_describe_response(r.name, r.response) for r in responses)
    calls = content.function_calls()
    if calls:
        return "call " + ", ".join(c.name for c in calls)
    return "(no text)"


def _describe_response(name: str, response: dict[str, Any]) -> str:
    if name == REQUEST_CONFIRMATION_FUNCTION:  # a person's answer to a tool confirmation
        return "confirmation: " + ("approved" if response.get("confirmed") else "rejected")
    return f"result of {name}"


def session_summary(app_name: str, user_id: str, session_id: str) -> str:
    """The static summary of a SessionWorkflow."""
    return _cap(f"{app_name} · user {user_id} · session {session_id}")


def run_summary(app_name: str, user_id: str, session_id: str, message: Content | None) -> str:
    """The static summary of an AgentRunWorkflow: its session and what it was asked."""
    return _cap(f"{app_name} · user {user_id} · session {session_id}: {describe_content(message)}")


def session_details(app_name: str, user_id: str, session_id: str, page_url: str | None = None) -> str:
    """Static details (markdown) of a conversation's workflow: its key, spelled out, and a link to
    the conversation on the dev page that started it (``page_url``: the page's base URL)."""
    details = f"**App** `{app_name}`  \n**User** `{user_id}`  \n**Session** `{session_id}`"
    if page_url:
        path = "/".join(quote(part, safe="") for part in (app_name, user_id, session_id))
        details += f"  \n[Open on the dev page: timeline, events, state]({page_url.rstrip('/')}/#/chat/{path})"
    return details


def turn_details(turn: int, message: Content, state: str) -> str:
    """Current details (markdown) of a conversation: its latest message and where its turn is."""
    return f"**Turn {turn}** ({state})  \n**Last message** {describe_content(message)}"


def model_call_summary(agent_name: str, model_name: str, request: LlmRequest, user_content: Content | None) -> str:
    """``support_agent: Where is my invoice… (gemini-2.5-flash)``: the agent, what it was asked
    (the newest content sent that is not retold context, else the invocation's user message) and
    the model. A transferred agent's request ends with what other agents said, retold as context
    ("For context: ..."): the user's words say better what the call is about."""
    newest = next((c for c in reversed(request.contents) if not _retold(c)), None) or user_content
    return _cap(f"{agent_name}: {describe_content(newest)} ({model_name})")


def _retold(content: Content) -> bool:
    """Framework-made context on the user's side: other agents' turns or a compaction's summary."""
    first = content.parts[0].text if content.parts else None
    return first in (CONTEXT_HEADER, SUMMARY_HEADER)


def _cap(summary: str) -> str:
    return snippet(summary, SUMMARY_CHARS)
