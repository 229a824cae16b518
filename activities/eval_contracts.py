"""What crosses the boundary between the eval workflows and their activities (one input type each)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from adk_core.eval import EvalResult, EvalSummary
from adk_core.eval.store import CaseRecord, RunRecord, TrialRecord

from .contracts import AppendEventsInput

LIST_CASES = "adk.eval_list_cases"
RECORD_RUN = "adk.eval_record_run"
RECORD_TRIAL = "adk.eval_record_trial"
FINISH_RUN = "adk.eval_finish_run"
RECORDED_TRIALS = "adk.eval_recorded_trials"
FINISH_FROM_STORE = "adk.eval_finish_from_store"
EVAL_ACTIVITY_NAMES = (LIST_CASES, RECORD_RUN, RECORD_TRIAL, FINISH_RUN, RECORDED_TRIALS, FINISH_FROM_STORE)


class ListCasesInput(BaseModel):
    suite: str
    """The cases' import reference (activities.eval_cases)."""
    names: list[str] | None = None
    """Only these cases (in the suite's order); None: all."""


class CaseInfo(BaseModel):
    name: str
    trials: int = 1
    description: str = ""


class ListCasesResult(BaseModel):
    cases: list[CaseInfo] = Field(default_factory=list)
    suite: str = ""
    """The reference in module form (a file path resolved where the worker runs), for the children."""


class RecordRunInput(BaseModel):
    run: RunRecord


class RecordTrialInput(BaseModel):
    run_id: str
    trial: TrialRecord
    events: list[AppendEventsInput] = Field(default_factory=list)
    """The trial's session events not stored yet, stored first (a trial with local model calls
    stores its last events with its record: one local activity, not two)."""


class FinishRunInput(BaseModel):
    run_id: str
    status: str
    summary: EvalSummary
    cases: list[CaseRecord] = Field(default_factory=list)
    end_time: float


class RecordedTrialsInput(BaseModel):
    run_id: str


class RecordedTrial(BaseModel):
    case_name: str
    trial: int
    status: str


class RecordedTrialsResult(BaseModel):
    trials: list[RecordedTrial] = Field(default_factory=list)


class FinishFromStoreInput(BaseModel):
    """Close a run from the trials the store holds (a suite that continued as new or resumed keeps
    no results in memory)."""

    run_id: str
    case_names: list[str]
    """The suite's cases in order; one without a recorded trial counts as skipped."""
    end_time: float
    max_results: int = 1_000
    """Return at most this many case results (the rest stay in the store)."""


class FinishFromStoreResult(BaseModel):
    summary: EvalSummary
    results: list[EvalResult] = Field(default_factory=list)
    results_omitted: int = 0
    status: str
