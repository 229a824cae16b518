"""Replay one trial from its recorded model responses, to debug a metric or a callback exactly.

    result = await replay_trial(store, sessions, "run-1", case, trial=0)
    result.diverged          # None, or why the replay could not go on (the agent asked something new)
    result.trace_changes     # where the replayed trace differs from the recorded one
    result.metric_changes    # metric -> (recorded, replayed)

The case runs again in this process (``drive_case`` with a ``LocalCaseHost``) with its current code:
callbacks, tools and mocks, metrics, scripted users. Only the models are replaced: a
``ReplayRuntime`` answers each model call of an agent with that agent's next recorded response
(the events with role ``model`` its trial stored, in order: system agents from the trial's main
session, LLM user agents from its user-agent session). Nothing calls a model, so a replay costs
nothing and answers the same every time; change a callback or a metric and the replay shows what
that changes. An agent that asks for more answers than its recording has, or an agent that never
ran in the recording, stops the replay with ``ReplayDivergedError`` (``diverged`` says which call).
Judges (``llm_judge``) were not recorded: they call their model only with ``judges=True``.

Model callbacks get what the model said: an event whose response an ``after_model_callback`` (the
agent's or a plugin's) replaced keeps the model's own in ``Event.callback_response``, and the replay
hands that one out, so the callback as it is now sees the model's words again (unchanged, it
reproduces the trial). A response a ``before_model_callback`` made up is marked there too and never
handed out: the replay runs the callback again. What the recording cannot give back: a response an
``on_model_error_callback`` gave after a model call failed is taken for a model's (the failure was
not recorded), and a streamed response replays as its final response alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..agents.context import InvocationContext
from ..errors import AdkError, ConfigurationError
from ..models.base import LlmRequest, LlmResponse, Model, UsageMetadata
from ..runtime import LocalRuntime
from ..sessions import SessionService
from ..types import Event
from ..types.event import ModelOutput
from .apps import case_apps
from .case import EvalCase
from .driver import drive_case
from .host import LocalCaseHost
from .results import EvalResult
from .store import EvalResultStore, TrialRecord

__all__ = ["ReplayDivergedError", "ReplayResult", "ReplayRuntime", "recorded_responses", "replay_case", "replay_trial"]


class ReplayDivergedError(AdkError):
    """The replayed agent asked a model something its recording has no answer for."""


def recorded_responses(events: Iterable[Event]) -> dict[str, list[LlmResponse]]:
    """Each agent's model responses in ``events``, in order (the stored, non-partial ones): what
    the model said where an after-model callback replaced it, and none a before-model callback
    made up (``Event.callback_response``)."""
    found: dict[str, list[LlmResponse]] = {}
    for e in events:
        said: Event | ModelOutput
        if e.partial or e.author == "user":
            continue
        if e.callback_response is not None:
            if e.callback_response.model_response is None:
                continue  # a before_model_callback answered: the replay runs it again, no model is asked
            said = e.callback_response.model_response
        elif e.content is not None and e.content.role == "model" or e.error_code:
            said = e
        else:
            continue
        found.setdefault(e.author, []).append(LlmResponse(
            content=said.content, finish_reason=said.finish_reason, error_code=said.error_code,
            error_message=said.error_message, model_version=said.model_version, custom_metadata=said.custom_metadata,
            usage_metadata=UsageMetadata.model_validate(said.usage_metadata) if said.usage_metadata else None,
            turn_complete=said.turn_complete, interrupted=said.interrupted,
        ))  # fmt: skip
    return found


class ReplayRuntime(LocalRuntime):
    """LocalRuntime whose model calls answer from ``recorded`` (agent name -> responses in order).

    Args:
        recorded: the responses to hand out, per agent.
        live_agents: agents whose calls go to their real model (judges, with ``judges=True``).
        refuse: agent name -> why its calls cannot be replayed (judges without ``judges=True``).
    """

    def __init__(self, recorded: dict[str, list[LlmResponse]], *, live_agents: Iterable[str] = (),
                 refuse: dict[str, str] | None = None) -> None:  # fmt: skip
        self.recorded = {name: list(responses) for name, responses in recorded.items()}
        self.used: dict[str, int] = {}
        self.live = set(live_agents)
        self.refuse = dict(refuse or {})
        self.diverged: ReplayDivergedError | None = None

    async def generate_content(
        self, model: Model, request: LlmRequest, *, stream: bool, ctx: InvocationContext
    ) -> AsyncIterator[LlmResponse]:
        name = ctx.agent.name
        if name in self.live:
            async for response in super().generate_content(model, request, stream=stream, ctx=ctx):
                yield response
            return
        used = self.used.get(name, 0)
        queue = self.recorded.get(name, [])
        if name in self.refuse or used >= len(queue):
            why = self.refuse.get(name) or (
                f"agent {name!r} asked for model response #{used + 1}, but the recording has "
                f"{len(queue) or 'no'} response{'s' if len(queue) != 1 else ''} of it{'' if queue else ' (it never called a model there)'}: "
                "the replay diverged from the recorded run (a callback, tool or instruction now leads elsewhere)"
            )  # fmt: skip
            self.diverged = self.diverged or ReplayDivergedError(why)
            raise ReplayDivergedError(why)
        self.used[name] = used + 1
        yield queue[used].model_copy(deep=True)

    def unused(self) -> dict[str, int]:
        """Recorded responses the replay did not ask for, per agent (none when it followed the recording)."""
        left = {name: len(queue) - self.used.get(name, 0) for name, queue in self.recorded.items()}
        return {name: n for name, n in left.items() if n > 0}


class ReplayResult(BaseModel):
    case_name: str
    trial: int
    recorded: TrialRecord
    replayed: EvalResult
    diverged: str | None = None
    """Why the replay stopped short of the recording (None: every model call had its recorded answer)."""
    unused_responses: dict[str, int] = Field(default_factory=dict)
    """Recorded responses, per agent, the replay never asked for (it ended sooner)."""
    trace_changes: list[str] = Field(default_factory=list)
    """Where the replayed trace differs from the recorded one (empty: the same events)."""
    metric_changes: dict[str, tuple[Any, Any]] = Field(default_factory=dict)
    """Metric -> ((passed, score) recorded, (passed, score) replayed), for metrics whose verdict moved."""

    @property
    def reproduced(self) -> bool:
        """The replay gave the recorded trace and verdicts."""
        return self.diverged is None and not self.trace_changes and not self.metric_changes and (
            self.replayed.status == self.recorded.status)  # fmt: skip


def _shape(event: Event) -> tuple:
    """What an event says, without ids and times."""
    return (event.author, event.text, [(c.name, c.args) for c in event.function_calls()],
            [(r.name, r.response) for r in event.function_responses()], event.actions.state_delta)  # fmt: skip


def trace_changes(recorded: Sequence[Event], replayed: Sequence[Event], *, limit: int = 5) -> list[str]:
    """The first ``limit`` differences between two traces, by event position."""
    before, after = [_shape(e) for e in recorded if not e.partial], [_shape(e) for e in replayed if not e.partial]
    changes = [f"event {i}: recorded {a!r}, replayed {b!r}" for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
    if len(before) != len(after):
        changes.append(f"the recorded trace has {len(before)} events, the replay {len(after)}")
    return changes[:limit]


async def replay_case(
    case: EvalCase, events: Sequence[Event], user_events: Sequence[Event] = (), *, trial: int = 0, judges: bool = False
) -> tuple[EvalResult, ReplayRuntime]:
    """Run ``case`` once with its models answering from ``events`` (the recorded main session) and
    ``user_events`` (the recorded user-agent session); see the module docstring."""
    recorded = recorded_responses(events)
    for name, responses in recorded_responses(user_events).items():
        recorded.setdefault(name, []).extend(responses)
    judge_names = [a.name for a in case_apps(case).judges.root_agent.sub_agents]
    refuse = {} if judges else {
        name: f"judge {name!r} was not recorded (judges answer in a scratch session); replay with judges=True "
              "(`adkt eval replay --judges`) to let it call its model"
        for name in judge_names
    }  # fmt: skip
    runtime = ReplayRuntime(recorded, live_agents=judge_names if judges else (), refuse=refuse)
    result = await drive_case(case, LocalCaseHost(case, runtime=runtime), trial=trial)
    return result, runtime


def _user_session_ref(main_app: str, main_session: str, case: EvalCase) -> tuple[str, str] | None:
    """Where a durable trial kept its user agents' session: the main session's names with the users
    app and ``users`` in place of ``main`` (None when the names were hashed down and cannot be derived)."""
    apps = case_apps(case)
    if not main_session.endswith("/main"):
        return None
    session = main_session.removesuffix("/main") + "/users"
    if main_app == apps.system.name:
        return apps.users.name, session
    if main_app.startswith(apps.system.name + "@"):
        return apps.users.name + main_app.removeprefix(apps.system.name), session
    return None


async def replay_trial(
    store: EvalResultStore, sessions: SessionService, run_id: str, case: EvalCase, *, trial: int = 0, judges: bool = False
) -> ReplayResult:
    """Replay trial ``trial`` of ``case`` in stored run ``run_id`` from its recorded model responses.

    Args:
        store: the results store holding the run.
        sessions: the session store holding its traces (the same database).
        run_id: the run.
        case: the case as it is now (the run's suite imported again, or an edited copy of it), named as recorded.
        trial: which trial.
        judges: let ``llm_judge`` metrics call their model (they were not recorded).
    """
    detail = await store.get_run(run_id)
    if detail is None:
        raise ConfigurationError(f"no eval run {run_id!r}; see `adkt eval list`")
    record = next((t for t in detail.trials if t.case_name == case.name and t.trial == trial), None)
    if record is None:
        known = ", ".join(sorted({f"{t.case_name}#{t.trial}" for t in detail.trials})) or "none"
        raise ConfigurationError(f"eval run {run_id!r} has no trial {case.name}#{trial}; its trials: {known}")
    ref = record.session
    main = await sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id) if ref else None
    if main is None or ref is None:
        raise ConfigurationError(
            f"trial {case.name}#{trial} of run {run_id!r} has no stored trace (an in-process run without a database), "
            "so there is nothing to replay; run it durably, or in-process with --database-url"
        )
    user_events: list[Event] = []
    where = _user_session_ref(ref.app_name, ref.session_id, case)
    if where is not None:
        users = await sessions.get_session(app_name=where[0], user_id=ref.user_id, session_id=where[1])
        user_events = list(users.events) if users else []
    replayed, runtime = await replay_case(case, main.events, user_events, trial=trial, judges=judges)
    changed: dict[str, tuple[Any, Any]] = {}
    for name in sorted({*record.metrics, *replayed.metrics}):
        before, after = record.metrics.get(name), replayed.metrics.get(name)
        verdicts = ((before.passed, before.score) if before else None, (after.passed, after.score) if after else None)
        if verdicts[0] != verdicts[1]:
            changed[name] = verdicts
    return ReplayResult(
        case_name=case.name, trial=trial, recorded=record, replayed=replayed,
        diverged=str(runtime.diverged) if runtime.diverged else None, unused_responses=runtime.unused(),
        trace_changes=trace_changes(main.events, replayed.events), metric_changes=changed,
    )  # fmt: skip
