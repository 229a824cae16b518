"""The bridge: what a user agent is told about the main session, and what its answer becomes there.

    main session --format_prompt(main_session, yield_info)--> a user message in the user agents' session
    user agent output --format_response(output, user_session, yield_info)--> the next main message
        (a loop yield: the user's text) or a tool's function response (a tool yield)

The user agents' session sees the system's side as the *user* role and its own answers as its own
events, so an LlmAgent plays the user without special context plumbing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._callables import call_maybe_async
from ..sessions import Session
from ..types import Event


@dataclass(frozen=True)
class YieldInfo:
    """Why a user agent is asked: the system's turn ended (``loop``) or a tool waits for an answer (``tool``)."""

    type: Literal["loop", "tool"]
    invocation_id: str
    awaiting_input: bool = False
    """Loop yields: the system waits for the user's next message."""
    tool_name: str | None = None
    call_id: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


FormatPrompt = Callable[[Session, YieldInfo], str | Awaitable[str]]
FormatResponse = Callable[[Any, Session, YieldInfo], Any]


def last_assistant_text(events: Sequence[Event]) -> str:
    """The newest non-empty text the system said (any agent, not the user)."""
    for event in reversed(events):
        if event.author != "user" and not event.partial and event.text:
            return event.text
    return ""


def default_format_prompt(main_session: Session, info: YieldInfo) -> str:
    """The seed's default: the last assistant text (loop), ``"Tool: {name}\\nArgs: {json}"`` (tool)."""
    if info.type == "tool":
        return f"Tool: {info.tool_name}\nArgs: {json.dumps(info.args, ensure_ascii=False)}"
    return last_assistant_text(main_session.events)


def default_format_response(output: Any, user_session: Session, info: YieldInfo) -> Any:
    """The seed's default: the user agent's output as is."""
    return output


@dataclass(frozen=True)
class Bridge:
    """Custom transforms between the main session and the user agents (both default to the seed's).

    Args:
        format_prompt: ``(main_session, yield_info) -> str``, sync or async: the message the user
            agent receives.
        format_response: ``(output, user_session, yield_info) -> value``, sync or async: for a loop
            yield the user's next message (text), for a tool yield the tool's result (a dict is
            used as is, anything else becomes ``{"result": value}``). ``output`` is the user agent's
            structured output (its ``output_key`` value) or else its last text.
    """

    format_prompt: FormatPrompt | None = None
    format_response: FormatResponse | None = None

    async def prompt(self, main_session: Session, info: YieldInfo) -> str:
        fn = self.format_prompt or default_format_prompt
        return str(await call_maybe_async(lambda: fn(main_session, info)))

    async def response(self, output: Any, user_session: Session, info: YieldInfo) -> Any:
        fn = self.format_response or default_format_response
        return await call_maybe_async(lambda: fn(output, user_session, info))
