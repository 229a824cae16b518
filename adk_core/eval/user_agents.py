"""User agents: who plays the human in a simulated conversation.

``UserAgents(loop=..., tools={...})``: ``loop`` answers loop yields (the system's turn ended and it
waits for the user), ``tools[name]`` answers tool yields (a long-running call, or
``adk_request_confirmation`` for a tool that asks for confirmation). Any agent works: an LlmAgent,
``scripted_user`` (deterministic, no model) or ``simulated_user`` (an LLM playing a persona through
a conversation plan, like google-adk's user simulator). All of a case's user agents share one
session, separate from the main one.

A loop agent ends the conversation by answering ``END_CONVERSATION`` (``"</finished>"``, google-adk's
stop signal) anywhere in its text. A user agent that answers nothing at all fails the case
(EvalUserAgentError): an empty answer is usually a model refusing or failing, not a user leaving.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents.base import BaseAgent, new_event
from ..agents.context import InvocationContext
from ..agents.llm_agent import LlmAgent
from ..errors import ConfigurationError
from ..models.base import Model
from ..types import Content, Event, EventActions

END_CONVERSATION = "</finished>"


@dataclass(frozen=True)
class UserAgents:
    """The agents that play the user.

    Args:
        loop: answers loop yields with the user's next message; None: the conversation ends when
            the system's turn ends with nothing pending.
        tools: tool name -> the agent answering that tool's yields. A yield on a tool missing here
            raises EvalUserAgentError.
    """

    loop: BaseAgent | None = None
    tools: Mapping[str, BaseAgent] = field(default_factory=dict)

    def all(self) -> list[BaseAgent]:
        """Each distinct agent once (one agent may answer several yields)."""
        found: list[BaseAgent] = []
        for agent in [self.loop, *self.tools.values()]:
            if agent is not None and all(agent is not a for a in found):
                found.append(agent)
        names = [a.name for a in found]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(
                f"user agents {duplicates} are different agents with the same name; they share one session, "
                "so give each a distinct name"
            )
        return found


ScriptFunction = Callable[[str, int], Any]
"""``(prompt, turn) -> answer``: the message the agent received and how many it answered before."""


class ScriptedUserAgent(BaseAgent):
    """A deterministic user: answers from a script, one item per time it is asked (no model).

    The seed's ``scripted_patient`` in one line: ``scripted_user("patient", ["I have chest pain",
    "About 30 minutes"])``. Its position lives in the user agents' session state (``"<name>:turn"``),
    so it survives a worker restart under the durable runtime.

    Args:
        name: agent name.
        script: the answers in order, or a function ``(prompt, turn) -> answer``. An answer is text,
            or any JSON value (a tool yield's result), or a ``with_state_change(...)`` wrapper.
        then: the answer once the script is used up (default: end the conversation).
    """

    def __init__(
        self, name: str, script: Sequence[Any] | ScriptFunction, *, then: Any = END_CONVERSATION, description: str = ""
    ) -> None:
        super().__init__(name=name, description=description or "A scripted user.")
        if isinstance(script, str) or not (callable(script) or isinstance(script, Sequence)):
            raise ConfigurationError(f"scripted user {name!r}: script must be a list of answers or a function")
        self.script = script
        self.then = then
        self.output_key = f"{name}:output"

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        counter = f"{self.name}:turn"
        turn = int(ctx.session.state.get(counter) or 0)
        prompt = ctx.user_content.text if ctx.user_content is not None else ""
        if callable(self.script):
            answer = self.script(prompt, turn)
        else:
            answer = self.script[turn] if turn < len(self.script) else self.then
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        yield new_event(
            ctx,
            author=self.name,
            content=Content.model(text),
            actions=EventActions(state_delta={counter: turn + 1, self.output_key: answer}),
        )


def scripted_user(name: str, script: Sequence[Any] | ScriptFunction, *, then: Any = END_CONVERSATION) -> ScriptedUserAgent:
    """A deterministic user agent answering from ``script`` (see ScriptedUserAgent)."""
    return ScriptedUserAgent(name, script, then=then)


SIMULATED_USER_INSTRUCTION = """You are playing a human user talking to an AI agent, to test it. Stay in character.

Who you are:
{persona}

Your plan for this conversation:
{plan}

Rules:
- The agent's messages reach you as user messages. Answer as this person would, in their words:
  short, natural messages, one at a time. Never act as the agent, never explain that this is a test.
- Reveal information only when the agent asks for it or when your plan says to.
- When asked a question by a tool (a message starting "Tool:"), answer that question only.
- When your plan is complete, or the conversation cannot go anywhere useful, answer exactly {stop}"""


def simulated_user(
    *,
    persona: str,
    plan: str,
    model: str | Model,
    name: str = "simulated_user",
    instruction: str | None = None,
    tools: Sequence[Any] = (),
) -> LlmAgent:
    """An LLM-backed user agent from a persona and a conversation plan (google-adk's user simulator).

    Use it as ``UserAgents(loop=...)`` and, for tool yields, in ``tools`` too: one agent, one session.

    Args:
        persona: who the user is and how they behave.
        plan: what they want from the conversation, in order; when it is done they answer
            END_CONVERSATION and the case completes.
        model: the model playing the user.
        name: the agent's name.
        instruction: replaces the built-in instruction; ``{persona}``, ``{plan}`` and ``{stop}``
            are filled in.
        tools: the user's own tools (never intercepted), e.g. one returning ``with_state_change``.
    """
    template = instruction or SIMULATED_USER_INSTRUCTION
    text = template.replace("{persona}", persona.strip()).replace("{plan}", plan.strip()).replace("{stop}", END_CONVERSATION)
    # A function instruction is used as is: no {state} templating of the persona's own braces.
    return LlmAgent(name=name, model=model, instruction=lambda ctx: text, description="Plays the user.", tools=tools)


def user_agent_output(agent: BaseAgent, events: Sequence[Event]) -> Any:
    """What a user agent answered in ``events`` (one run): its ``output_key`` value when it set one
    (structured output), else its last text; None when it said nothing."""
    key = getattr(agent, "output_key", None)
    if key:
        for event in reversed(events):
            if key in event.actions.state_delta:
                return event.actions.state_delta[key]
    for event in reversed(events):
        if event.author != "user" and not event.partial and event.text:
            return event.text
    return None


def ends_conversation(answer: Any) -> bool:
    """Whether a loop answer is the stop signal."""
    return isinstance(answer, str) and END_CONVERSATION in answer.lower()
