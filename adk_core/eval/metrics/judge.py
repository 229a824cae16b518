"""llm_judge: a model reads the transcript and judges it against a rubric; several samples vote.

The judge is an LlmAgent run through the engine (``MetricContext.run_judge``), so in-process it is
an ordinary model call and under the durable runtime an ``adk.generate_content`` activity: a
judged trial that resumes after a crash does not pay for its verdicts twice.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ...agents.llm_agent import LlmAgent
from ...errors import ConfigurationError, InvalidInputError
from ...models.base import Model
from ...types import Content
from ..trace import Trace
from .base import MetricContext, MetricResult

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"
"""google-adk's default judge; pass ``model=`` to use another (any name the registry resolves, or a Model)."""

JUDGE_INSTRUCTION = """You are a strict evaluator of conversations between a user and an AI agent system.
You receive a rubric and a transcript. Lines look like "[author] text", "[author] calls tool({args})"
and "[tool result] {json}". Judge only what the transcript shows.

A line "[... N lines (M characters) cut here ...]" marks where a long transcript was shortened to fit:
do not count what you cannot see there as missing.

Answer with one JSON object and nothing else:
{"passed": true or false, "score": a number from 0 to 1, "reasoning": "one or two sentences"}"""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    score: float | None
    reasoning: str


def parse_verdict(text: str) -> Verdict:
    """The judge's answer: a JSON object (possibly fenced or with prose around it); else a leading
    PASS/FAIL, YES/NO word. Anything else raises ValueError."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data: Any = json.loads(match.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("passed"), bool):
            score, note = _score(data.get("score"), text)
            reasoning = str(data.get("reasoning", ""))
            return Verdict(passed=data["passed"], score=score, reasoning=f"{reasoning} ({note})" if note else reasoning)
    word = text.strip().split(maxsplit=1)[0].strip(".:!,*").lower() if text.strip() else ""
    if word in ("pass", "passed", "yes", "true"):
        return Verdict(True, None, text.strip())
    if word in ("fail", "failed", "no", "false"):
        return Verdict(False, None, text.strip())
    raise InvalidInputError(f"the judge answered {text[:200]!r}, not a verdict; expected JSON like {{\"passed\": true, ...}}")


def _score(raw: Any, text: str) -> tuple[float | None, str]:
    """The verdict's score, clamped to [0, 1], and a note when it was clamped. Missing stays None;
    anything but a finite number (or a string holding one) is refused, so a judge answering
    ``"score": "high"`` or ``NaN`` cannot slip a meaningless number into the mean."""
    if raw is None:
        return None, ""
    value: float | None = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            value = None
    if value is None or not math.isfinite(value):
        raise InvalidInputError(
            f"the judge's score {raw!r} is not a number from 0 to 1 (answer: {text[:200]!r}); the judge must answer "
            'JSON like {"passed": true, "score": 0.8, ...}: check its model and instruction'
        )
    clamped = min(1.0, max(0.0, value))
    return clamped, (f"score {value:g} clamped to {clamped:g}" if clamped != value else "")


@dataclass(frozen=True)
class LlmJudge:
    name: str
    prompt: str
    agent: LlmAgent
    num_samples: int = 1
    agents: tuple[LlmAgent, ...] = field(default=())

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        return await self.judge(trace.transcript(), ctx)

    async def judge(self, transcript: str, ctx: MetricContext, *, rubric: str | None = None) -> MetricResult:
        """Ask ``num_samples`` verdicts on ``transcript`` against ``rubric`` (default: the metric's prompt)."""
        if ctx.run_judge is None:
            raise ConfigurationError(
                f"llm_judge {self.name!r} needs a way to call its model; score with run_eval / drive_case, or "
                "evaluate_trace(..., run_judge=...)"
            )
        message = Content.user(f"Rubric:\n{(rubric or self.prompt).strip()}\n\nTranscript:\n{transcript}")
        verdicts: list[Verdict] = []
        for _ in range(self.num_samples):
            # Samples run one after another: each is its own model call (its own activity when durable).
            events = await ctx.run_judge(self.agent, message)
            verdicts.append(parse_verdict(Trace(events).final_response() or _last_text(events)))
        votes = sum(v.passed for v in verdicts)
        # A sample without a score counts by its vote: dropping it would let one "safe, 1.0" outweigh
        # four bare "unsafe" verdicts. Without any score this is the share of passing votes.
        scores = [v.score if v.score is not None else float(v.passed) for v in verdicts]
        return MetricResult(
            passed=votes * 2 > len(verdicts),  # a strict majority; a tie fails
            score=sum(scores) / len(scores),
            value={"votes_passed": votes, "samples": len(verdicts)},
            evidence=[f"{'pass' if v.passed else 'fail'}: {v.reasoning}" for v in verdicts],
        )


def _last_text(events: list[Any]) -> str:
    return next((e.text for e in reversed(events) if e.author != "user" and e.text), "")


def llm_judge(
    *,
    name: str,
    prompt: str,
    model: str | Model = DEFAULT_JUDGE_MODEL,
    num_samples: int = 1,
    instruction: str = JUDGE_INSTRUCTION,
) -> LlmJudge:
    """Pass when a strict majority of ``num_samples`` judge answers say the transcript meets the rubric.

    Args:
        name: the metric's name.
        prompt: the rubric: what the conversation must show.
        model: the judge model (a name or a Model).
        num_samples: how many independent verdicts to ask for (odd numbers avoid ties; a tie fails).
        instruction: the judge's system instruction (it must ask for the JSON verdict).

    The score is the mean over the samples of each one's score (clamped to [0, 1], the clamp noted in
    the evidence; a score that is not a number is an error), or of its vote (1 pass, 0 fail) when it
    gave none; without any score, the share of passing votes.
    A transcript over 20,000 characters keeps its start and its end, with a line saying what was cut.
    """
    if num_samples < 1:
        raise ConfigurationError(f"llm_judge {name!r}: num_samples must be >= 1, not {num_samples}")
    agent = LlmAgent(
        name="judge_" + re.sub(r"\W", "_", name),
        model=model,
        instruction=lambda ctx: instruction,  # used as is: the JSON braces are not state placeholders
        description=f"Judges eval metric {name!r}.",
    )
    return LlmJudge(name=name, prompt=prompt, agent=agent, num_samples=num_samples, agents=(agent,))
