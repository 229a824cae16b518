"""Contents: the conversation the model sees, built from session events.

Built one event at a time (``event_to_content``), so the contents of a log are the contents of
its prefix followed by the contents of the rest. The durable runtime relies on that: a model
activity gets a reference to the committed prefix and reads it from the session store itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal

from ..types import REQUEST_CONFIRMATION_FUNCTION, Content, Event, Part

IncludeContents = Literal["default", "none"]


def belongs_to_branch(event_branch: str | None, branch: str | None) -> bool:
    """An event is visible on ``branch`` when it was made on that branch or an ancestor of it."""
    if not branch or not event_branch:
        return True
    return branch == event_branch or branch.startswith(event_branch + ".")


def event_to_content(event: Event, agent_name: str, branch: str | None) -> Content | None:
    """What one event contributes to ``agent_name``'s request, or None."""
    content = event.content
    if content is None or not content.parts or event.partial:
        return None
    if not belongs_to_branch(event.branch, branch):
        return None
    awaiting = event.actions.requested_tool_confirmations
    parts = [p for p in content.parts if _keep_part(p, awaiting)]
    if not parts:
        return None
    if event.author not in (agent_name, "user"):
        return _as_context(event.author, parts)
    if len(parts) == len(content.parts):
        return content
    return Content(role=content.role, parts=parts)


def _keep_part(part: Part, awaiting_confirmation: dict[str, object]) -> bool:
    if part.function_call is not None:
        return part.function_call.name != REQUEST_CONFIRMATION_FUNCTION
    if part.function_response is not None:
        # The confirmation exchange is between the app and a human, and a response that only
        # asked for confirmation is superseded by the real one that follows it.
        if part.function_response.name == REQUEST_CONFIRMATION_FUNCTION:
            return False
        return part.function_response.id not in awaiting_confirmation
    if part.thought:
        return False
    return part.text is not None or part.inline_data is not None or part.file_data is not None


def _as_context(author: str, parts: list[Part]) -> Content | None:
    """Another agent's turn, retold as user-side context so the model does not take it as its own."""
    lines: list[Part] = [Part(text="For context:")]
    for part in parts:
        if part.text:
            lines.append(Part(text=f"[{author}] said: {part.text}"))
        elif part.function_call is not None:
            call = part.function_call
            lines.append(Part(text=f"[{author}] called tool `{call.name}` with parameters: {_dumps(call.args)}"))
        elif part.function_response is not None:
            resp = part.function_response
            lines.append(Part(text=f"[{author}] `{resp.name}` tool returned result: {_dumps(resp.response)}"))
        else:
            lines.append(part)
    return Content(role="user", parts=lines) if len(lines) > 1 else None


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def build_contents(events: Iterable[Event], agent_name: str, branch: str | None) -> list[Content]:
    contents = []
    for event in events:
        content = event_to_content(event, agent_name, branch)
        if content is not None:
            contents.append(content)
    return contents


def current_turn_events(events: list[Event]) -> list[Event]:
    """Events from the latest user message on: what ``include_contents="none"`` shows."""
    for i in range(len(events) - 1, -1, -1):
        if events[i].author == "user" and events[i].text:
            return events[i:]
    return events


def contents_for_ref(events: list[Event], agent_name: str, branch: str | None, current_turn_only: bool) -> list[Content]:
    """The contents a ContentsRef stands for, given the stored events it points at (in order)."""
    if current_turn_only:
        events = current_turn_events(events)
    return build_contents(events, agent_name, branch)
