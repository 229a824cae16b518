"""Inputs and results of the eval workflows: plain pydantic models, so a suite starts from the CLI:

    temporal workflow start --type EvalSuiteWorkflow --task-queue adk --workflow-id adk-eval/r1 \\
        --input '{"suite": "examples.eval_chest_pain:cases"}'
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from adk_core.eval import EvalSuiteResult

EVAL_WORKFLOW_PREFIX = "adk-eval/"
"""Suite workflow ids are ``adk-eval/<run id>``; without a run_id in the input the rest of the id is it."""
MAX_RUN_ID_LENGTH = 100
"""Run ids become part of session ids and app names (256 characters at most)."""
DEFAULT_MAX_HISTORY_EVENTS = 4_000
"""A suite continues as new once its history holds this many events (or when Temporal suggests it,
whichever comes first): about 6 events per trial, so some 600 trials per run of the chain."""
ModelCalls = Literal["local_activity", "activity"]
MAX_TRIAL_RESTARTS = 3
"""How many times a trial with local model calls starts over after a lost workflow task left
other answers in its sessions (StoredByLostTask); each needs a worker lost mid-trial."""
MAX_UNRECORDED_TRIALS = 2_000
"""Without the results store (``record=false``) a suite keeps every result in memory and cannot
continue as new, so its history and its result must fit one run: at most this many trials."""
MAX_RESULTS_INLINE = 1_000
"""A suite that continued as new (or resumed) returns at most this many case results; the rest
stay in the results store (``results_omitted`` says how many)."""


class EvalSuiteInput(BaseModel):
    suite: str
    """The cases' import reference: ``module:attr`` (an EvalCase or a list of them) or ``module``."""
    run_id: str | None = None
    """Names the run in the results store; default: from the workflow id."""
    cases: list[str] | None = None
    """Only these cases; None: all of them."""
    trials: int | None = None
    """Trials of every case (default: each case's own ``trials``)."""
    max_concurrency: int | None = None
    """At most this many trials at once (None: all at once)."""
    stop_on_first_failure: bool = False
    """Start no further trial once one has not passed; cases that never started count as skipped."""
    record: bool = True
    """Write the run, its trials and cases to the results store (adk_core.eval.store)."""
    resume: int = 0
    """0: a new run. n >= 1: the n-th resume of ``run_id`` (``adkt eval resume``): trials the store
    already holds are not run again; the others run in sessions of their own (``<trial>.<n>``)."""
    model_calls: ModelCalls = "local_activity"
    """How trials call models: ``local_activity`` (no server task per call: the trial's steps are
    recorded together, at the latest every few seconds; a worker lost mid-trial runs it again from the
    last recorded step, in new sessions if a model answers otherwise) or ``activity`` (each call an
    activity of its own: for calls of minutes, or to see every call as an activity in Temporal's UI).
    An agent with a ``model_task_queue`` calls through its queue either way."""
    max_history_events: int | None = None
    """Continue as new once the history holds this many events (default DEFAULT_MAX_HISTORY_EVENTS,
    or earlier when Temporal suggests it). Only with ``record``: the results store carries the results."""
    carry: SuiteCarry | None = None
    """Set by the suite itself when it continues as new (what it did so far); never by a caller."""

    @field_validator("trials", "max_concurrency", "max_history_events")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"must be >= 1 or null, not {value}")
        return value

    @classmethod
    def resume_of(cls, run: Any) -> EvalSuiteInput:
        """The input that resumes stored run ``run`` (an adk_core.eval.store.RunRecord of a durable
        run): its suite and options, ``resume`` one more than the last. Start it under the run's
        workflow id (``adk-eval/<run id>``) once the run's workflow has closed (cancelled, failed)."""
        if getattr(run, "mode", "durable") != "durable":
            raise ValueError(f"eval run {run.run_id!r} ran in-process; only durable runs resume (run it again instead)")
        config = dict(run.config or {})
        known = {k: config[k] for k in _RESUMED_OPTIONS if k in config}
        return cls(suite=run.suite, run_id=run.run_id, **known, resume=int(config.get("resume") or 0) + 1)

    @field_validator("resume")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be 0 (a new run) or the number of the resume, not {value}")
        return value


_RESUMED_OPTIONS = (
    "cases", "trials", "max_concurrency", "stop_on_first_failure", "max_history_events", "model_calls",
)
"""What a resume takes over from the stored run's config (the rest is the run's id and suite)."""


class EvalCaseInput(BaseModel):
    """One trial of one case, the child of a suite (or started on its own)."""

    suite: str
    case_name: str
    run_id: str
    trial: int = 0
    record: bool = True
    attempt: int = 0
    """0, or the resume that runs this trial again (its sessions are then ``<trial>.<attempt>``)."""
    mocks_local: bool | None = None
    """Run mocked tools as local activities (adk_core.eval.interception.mocks_run_locally). A suite
    says True; None (a trial started on its own, or by a suite from before this field) lets a
    workflow patch decide, so trials recorded with mocks as activities replay as they ran."""
    model_calls: ModelCalls = "activity"
    """EvalSuiteInput.model_calls; ``activity`` for trials started before the field (they replay so)."""


class EvalSuiteRunResult(EvalSuiteResult):
    """The suite's result: results per case (trials inside, events left out: each trial names the
    session that holds its trace), the summary, and which run it was."""

    run_id: str
    suite: str
    results_omitted: int = 0
    """Cases left out of ``results`` (a suite larger than MAX_RESULTS_INLINE that continued as new or
    resumed); every case and trial is in the results store (``adkt eval show RUN``)."""
    continued_as_new: int = 0
    """How many times the suite continued as new."""

    @property
    def passed(self) -> bool:
        """Every case ran and passed. With results omitted, ``results`` holds only the first cases, so
        the summary (it counts every case: the stored run's status comes from the same counts) decides
        too: a failing case past MAX_RESULTS_INLINE must fail the suite (and the CLI's exit code)."""
        counts = self.summary
        return super().passed and (not self.results_omitted or 0 < counts.passed == counts.total)


class EvalProgress(BaseModel):
    """The ``progress`` query of EvalSuiteWorkflow: trials, not cases."""

    total: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    terminated: int = 0
    not_evaluated: int = 0
    skipped: int = 0
    running: list[str] = Field(default_factory=list)
    """``case#trial`` of the trials running now."""


class SuiteCarry(BaseModel):
    """What one run of a suite hands the next when it continues as new. Bounded: counters and a
    position, never results (those are in the results store)."""

    next: int = 0
    """Index of the next trial to start, in the plan's order (cases in order, then trial numbers)."""
    progress: EvalProgress = Field(default_factory=EvalProgress)
    stopped: bool = False
    """stop_on_first_failure fired: nothing further starts."""
    start_time: float = 0.0
    hops: int = 0
    """Runs so far that continued as new."""


EvalSuiteInput.model_rebuild()
