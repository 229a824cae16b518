"""Inputs and results of the eval workflows: plain pydantic models, so a suite starts from the CLI:

    temporal workflow start --type EvalSuiteWorkflow --task-queue adk --workflow-id adk-eval/r1 \\
        --input '{"suite": "examples.eval_chest_pain:cases"}'
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from adk_core.eval import EvalSuiteResult

EVAL_WORKFLOW_PREFIX = "adk-eval/"
"""Suite workflow ids are ``adk-eval/<run id>``; without a run_id in the input the rest of the id is it."""
MAX_RUN_ID_LENGTH = 100
"""Run ids become part of session ids and app names (256 characters at most)."""


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

    @field_validator("trials", "max_concurrency")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"must be >= 1 or null, not {value}")
        return value


class EvalCaseInput(BaseModel):
    """One trial of one case, the child of a suite (or started on its own)."""

    suite: str
    case_name: str
    run_id: str
    trial: int = 0
    record: bool = True


class EvalSuiteRunResult(EvalSuiteResult):
    """The suite's result: results per case (trials inside, events left out: each trial names the
    session that holds its trace), the summary, and which run it was."""

    run_id: str
    suite: str


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
