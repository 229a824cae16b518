"""LlmEventsSummarizer: the default summarizer, any Model writing the summary from a transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import ConfigurationError
from ..models.base import GenerateContentConfig, LlmRequest, Model
from ..models.registry import resolve_model
from ..types import Content, Event, Part

DEFAULT_PROMPT = (
    "You are compacting the history of a conversation between a user and an AI agent, so the agent "
    "can go on with a summary instead of the full transcript. Write a concise summary that keeps "
    "everything the agent may need later: the user's goals, requests and preferences, facts, names, "
    "numbers and decisions, tool results that matter, and open questions or promises. If the "
    "transcript starts with an earlier summary, fold it in: your summary replaces it. Write plain "
    "text, with no preamble.\n\nTranscript:\n{transcript}"
)
MAX_VALUE_CHARS = 2000
"""A tool's arguments or result are cut to this in the transcript: the summarizer's own request
must stay bounded however large a single result was."""


class LlmEventsSummarizer:
    """Summarizes events with a model.

    Args:
        model: a Model, or a name the model registry resolves (e.g. "gemini-2.5-flash").
        prompt: the instruction, with ``{transcript}`` where the events go.
    """

    def __init__(self, model: Model | str, *, prompt: str = DEFAULT_PROMPT) -> None:
        if "{transcript}" not in prompt:
            raise ConfigurationError("the summarizer prompt needs a {transcript} placeholder where the events go")
        self._model = model
        self.prompt = prompt

    @property
    def model(self) -> Model:
        if isinstance(self._model, str):
            return resolve_model(self._model)
        return self._model

    def request(self, events: Sequence[Event]) -> LlmRequest:
        """The request the model gets for ``events`` (deterministic: the same events, the same request)."""
        model = self.model
        text = self.prompt.replace("{transcript}", transcript(events))
        return LlmRequest(model=model.name, contents=[Content.user(text)], config=GenerateContentConfig())

    async def summarize_events(self, events: Sequence[Event]) -> Content | None:
        if not events:
            return None
        request = self.request(events)
        texts = [
            r.content.text async for r in self.model.generate_content(request) if r.content is not None and not r.partial
        ]
        summary = "".join(texts).strip()
        return Content(role="model", parts=[Part(text=summary)]) if summary else None


def transcript(events: Sequence[Event]) -> str:
    """Events as plain text lines, oldest first: who said or did what."""
    lines: list[str] = []
    for event in events:
        if event.actions.compaction is not None:
            lines.append(f"[summary of the conversation before]\n{event.actions.compaction.compacted_content.text}")
            continue
        if event.content is None or event.partial:
            continue
        for part in event.content.parts:
            if part.thought:
                continue
            if part.text:
                lines.append(f"[{event.author}] {part.text}")
            elif part.function_call is not None:
                call = part.function_call
                lines.append(f"[{event.author}] called tool {call.name} with {_clip(call.args)}")
            elif part.function_response is not None:
                response = part.function_response
                lines.append(f"[{event.author}] tool {response.name} returned {_clip(response.response)}")
    return "\n".join(lines)


def _clip(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "...(cut)"
