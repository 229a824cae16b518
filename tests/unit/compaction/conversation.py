"""A long scripted conversation with compaction on, shared by the in-process and durable tests."""

from __future__ import annotations

import re

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.flow.contents import SUMMARY_HEADER
from adk_core.models.base import LlmRequest, LlmResponse, UsageMetadata
from adk_core.types import Content, Part

TURNS = 200
INTERVAL = 5
OVERLAP = 1
TOKEN_THRESHOLD = 400
"""The token trigger's threshold (``trigger="tokens"``): the agent's model reports a character in
four of the request's text as a prompt token, so it trips at about 1,600 characters, five turns."""
RETAINED = 3
ANSWER_PADDING = " and that is the whole answer, with some detail a real agent would add" * 3


def question(n: int) -> str:
    return f"question {n}: what comes after {n}?"


def answer(request: LlmRequest) -> str:
    """The agent answers the latest question (found in the request, so a retried call answers the same)."""
    asked = re.findall(r"question (\d+):", request_text(request))
    n = int(asked[-1]) if asked else 0
    return f"After {n} comes {n + 1}{ANSWER_PADDING}."


def summarize(request: LlmRequest) -> str:
    """A summary of bounded size: which questions the transcript holds (an earlier summary's included)."""
    asked = [int(n) for n in re.findall(r"question (\d+):", request_text(request))]
    covered = re.findall(r"questions (\d+) to (\d+)", request_text(request))
    low = min([*asked, *(int(a) for a, _ in covered)], default=0)
    high = max([*asked, *(int(b) for _, b in covered)], default=0)
    return f"The user asked questions {low} to {high}, each what number comes next; the agent answered each."


def request_text(request: LlmRequest) -> str:
    """All the text a model request carries: what "input size" is counted in."""
    parts = [request.config.system_instruction or ""]
    parts += [p.text for c in request.contents for p in c.parts if p.text]
    return "\n".join(parts)


def answer_counting_tokens(request: LlmRequest) -> LlmResponse:
    """``answer``, reporting the request's prompt tokens as a provider would (a token per 4 characters)."""
    return LlmResponse(
        content=Content.model(answer(request)), turn_complete=True,
        usage_metadata=UsageMetadata(prompt_token_count=len(request_text(request)) // 4, candidates_token_count=40),
    )


def make_app(
    name: str, *, compaction: bool = True, edit_contents: bool = False, trigger: str = "interval"
) -> tuple[App, ScriptedModel, ScriptedModel]:
    """The app, its agent's model and its summarizer's model (each records its requests).

    ``edit_contents`` adds a before-model callback that edits the newest content, as a callback
    may: the durable runtime then sends the loaded events by value, only older ones by reference.
    ``trigger="tokens"``: compaction by ``TOKEN_THRESHOLD`` prompt tokens, keeping ``RETAINED`` events,
    instead of every ``INTERVAL`` invocations; ``trigger="estimated"``: the same, by a model that
    reports no usage, so the runtime's estimate of each prompt trips it."""
    model = ScriptedModel(answer_counting_tokens if trigger == "tokens" else answer, name="agent-model")
    summarizer_model = ScriptedModel(summarize, name="summarizer-model")
    agent = LlmAgent(
        name="counter", model=model, instruction="Answer what number comes next.",
        before_model_callback=_mark_last_content if edit_contents else None,
    )
    summarizer = LlmEventsSummarizer(summarizer_model)
    config = (
        None if not compaction
        else EventsCompactionConfig(summarizer=summarizer, token_threshold=TOKEN_THRESHOLD, event_retention_size=RETAINED)
        if trigger in ("tokens", "estimated")
        else EventsCompactionConfig(INTERVAL, OVERLAP, summarizer=summarizer)
    )
    return App(name=name, root_agent=agent, events_compaction_config=config), model, summarizer_model


def _mark_last_content(callback_context, llm_request: LlmRequest) -> None:
    last = llm_request.contents[-1]
    llm_request.contents[-1] = last.model_copy(update={"parts": [*last.parts, Part(text="(a callback's note)")]})


STEPS = 3
"""Tool rounds in each turn of the agentic conversation (``agentic_app``)."""


async def step(n: int) -> dict:
    """One step of the work."""
    return {"done": n, "log": "step output " * 20}


def steps_done(request: LlmRequest) -> int:
    """How many steps this turn made: one more than the newest step result since the user's message.
    A summary (the user's side too) may stand in for the message and the first steps: the newest
    result is kept verbatim by the compaction's split, so it still counts."""
    for content in reversed(request.contents):
        for part in reversed(content.parts):
            if part.function_response is not None:
                return int(part.function_response.response["done"]) + 1
        if content.role == "user" and content.parts and content.parts[0].text and content.parts[0].text != SUMMARY_HEADER:
            return 0
    return 0


def agentic_app(
    name: str, *, steps: int = STEPS, token_threshold: int = 900, keep: int = 3, reports_usage: bool = True
) -> tuple[App, ScriptedModel, ScriptedModel]:
    """Each turn runs ``steps`` tool rounds, then answers; the model reports a prompt token per 4
    characters of the request's JSON (unless not ``reports_usage``: the runtime estimates them), and
    the token trigger keeps ``keep`` events."""

    def work(request: LlmRequest) -> LlmResponse:
        done = steps_done(request)
        content = Content.model("finished") if done >= steps else Content(
            role="model", parts=[Part.from_function_call("step", {"n": done})]
        )
        size = sum(len(c.model_dump_json()) for c in request.contents) + len(request.config.system_instruction or "")
        usage = UsageMetadata(prompt_token_count=size // 4) if reports_usage else None
        return LlmResponse(content=content, turn_complete=True, usage_metadata=usage)

    model = ScriptedModel(work, name="agentic-model")
    summarizer_model = ScriptedModel(lambda r: f"summary of {len(r.contents)} contents", name="summarizer-model")
    config = EventsCompactionConfig(
        summarizer=LlmEventsSummarizer(summarizer_model), token_threshold=token_threshold, event_retention_size=keep
    )
    agent = LlmAgent(name="worker", model=model, instruction="Do the work in steps.", tools=[step])
    return App(name=name, root_agent=agent, events_compaction_config=config), model, summarizer_model


def without_call_ids(requests: list[list[dict]]) -> list[list[dict]]:
    """The contents less the tool call ids, which each runtime draws afresh."""
    for contents in requests:
        for content in contents:
            for part in content["parts"]:
                for key in ("function_call", "function_response"):
                    if part[key] is not None:
                        part[key]["id"] = None
    return requests
