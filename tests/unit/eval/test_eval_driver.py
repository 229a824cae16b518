"""drive_case: statuses, termination reasons, metrics on partial traces, trials and pass^k, isolation,
and that the loop reaches the world only through its host and runtime."""

from __future__ import annotations

from typing import Any

from eval_fixtures import FakeClock, agent, function_responses, user_texts

from adk_core import LlmRequest, ToolContext
from adk_core.errors import ModelError
from adk_core.eval import (
    EvalCase,
    EvalResult,
    LocalCaseHost,
    TerminateWhen,
    UserAgents,
    case_apps,
    drive_case,
    event_count_metric,
    llm_judge,
    metric,
    passthrough,
    run_eval,
    scripted_user,
    state_metric,
)
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.models.base import UsageMetadata
from adk_core.types import Content


def set_step(step: int, tool_context: ToolContext) -> dict:
    """Record how far the work got."""
    tool_context.state["step"] = step
    return {"step": step}


def _stepping_system() -> Any:
    """Each turn sets state 'step' to the number of user messages so far, then asks to continue."""

    def script(request: LlmRequest) -> Any:
        turn = len(user_texts(request))
        if request.contents[-1].function_responses():  # set_step just answered
            return text_response(f"step {turn} done; shall I go on?")
        return function_call_response("set_step", {"step": turn})

    return agent(script, tools=[set_step])


def _case(name: str, **kwargs: Any) -> EvalCase:
    kwargs.setdefault("app_or_agent", _stepping_system())
    kwargs.setdefault("first_message", "start")
    kwargs.setdefault("tool_mocks", passthrough(set_step))
    kwargs.setdefault("user_agents", UserAgents(loop=scripted_user("human", lambda prompt, turn: "go on")))
    return EvalCase(name, **kwargs)


async def test_state_matches_ends_the_run_and_metrics_decide() -> None:
    reached = state_metric(name="reached", key="step", assertion=lambda v: v == 3)
    query = {"session": {"step": {"$gte": 3}}}
    result = await run_eval(_case("goal", terminate_when=TerminateWhen(max_turns=10, state_matches=query),
                                  metrics=[reached]))
    assert (result.status, result.termination_reason, result.turns) == ("passed", "state_matches", 3)
    assert result.metrics["reached"].value == 3
    wrong = state_metric(name="reached", key="step", assertion=lambda v: v == 99)
    failed = await run_eval(_case("goal-failed", terminate_when=TerminateWhen(state_matches=query), metrics=[wrong]))
    assert (failed.status, failed.termination_reason) == ("failed", "state_matches")


async def test_max_turns_terminates_and_metrics_still_run_on_the_partial_trace() -> None:
    counted = event_count_metric(name="calls", event_type="tool_call", assertion=lambda n: n == 2)
    result = await run_eval(_case("stuck", terminate_when=TerminateWhen(max_turns=2), metrics=[counted]))
    assert (result.status, result.termination_reason, result.turns) == ("terminated", "max_turns", 2)
    assert result.metrics["calls"].passed and result.metrics["calls"].value == 2
    assert [e.text for e in result.events if e.author == "user"] == ["start", "go on"]  # the 3rd turn never ran


async def test_max_duration_terminates_by_the_runtimes_clock() -> None:
    clocks: list[FakeClock] = []

    def make() -> FakeClock:
        clocks.append(FakeClock(step=1.0))  # every reading advances one second
        return clocks[-1]

    result = await run_eval(_case("slow", terminate_when=TerminateWhen(max_duration=20)), runtime_factory=make)
    assert (result.status, result.termination_reason) == ("terminated", "max_duration")
    assert 0 < result.turns < 20
    assert result.duration_ms >= 20_000
    assert all(e.id.startswith("id-") for e in result.events)  # ids and timestamps come from the runtime


async def test_a_system_that_just_answers_completes_but_without_metrics_is_not_evaluated() -> None:
    result = await run_eval(EvalCase("simple", app_or_agent=agent(lambda r: text_response("hi")), first_message="x"))
    assert (result.status, result.turns, result.termination_reason, result.metrics) == ("not_evaluated", 1, None, {})
    assert result.error is None and not result.passed
    assert result.session is not None and result.session.app_name == "eval:simple"


async def test_a_failing_system_is_an_error_in_the_system_phase() -> None:
    def broken(request: LlmRequest) -> Any:
        raise ModelError("quota exceeded", status=429, retryable=True, provider="scripted")

    result = await run_eval(EvalCase("broken", app_or_agent=agent(broken), first_message="x",
                                     metrics=[metric("never", lambda t: True)]))
    assert result.status == "error" and result.error is not None
    assert (result.error.phase, result.error.error_type, result.error.message) == ("system", "ModelError", "quota exceeded")
    assert result.metrics == {}


async def test_a_raising_metric_is_an_error_in_the_metric_phase_and_the_others_still_score() -> None:
    def boom(trace: Any) -> bool:
        raise ValueError("bad metric")

    result = await run_eval(EvalCase("metric-error", app_or_agent=agent(lambda r: text_response("hi")),
                                     first_message="x", metrics=[metric("boom", boom), metric("ok", lambda t: True)]))
    assert result.status == "error" and result.error is not None and result.error.phase == "metric"
    assert result.error.message == "metric 'boom': ValueError: bad metric"
    assert result.metrics["ok"].passed and not result.metrics["boom"].passed


async def test_trials_are_isolated_and_pass_hat_k_counts_them() -> None:
    runs = {"n": 0}

    def flaky(request: LlmRequest) -> Any:
        if function_responses(request):
            return text_response("done")
        runs["n"] += 1
        return function_call_response("set_step", {"step": runs["n"]})

    case = EvalCase("flaky", app_or_agent=agent(flaky, tools=[set_step]), first_message="x",
                    tool_mocks=passthrough(set_step), trials=4,
                    metrics=[state_metric(name="even", key="step", assertion=lambda v: v % 2 == 0)])
    result = await run_eval(case)
    assert [t.trial for t in result.trials] == [0, 1, 2, 3]
    assert [t.status for t in result.trials] == ["failed", "passed", "failed", "passed"]
    assert result.status == "failed" and result.trial == 0  # shows the first trial that did not pass
    assert result.pass_hat(1) == 0.5 and result.pass_hat(2) == 1 / 6 and result.pass_hat_k == 0.0
    # each trial had its own session: one user message and one state value each
    assert all(len([e for e in t.events if e.author == "user"]) == 1 for t in result.trials)


async def test_token_usage_adds_up_and_results_round_trip_as_json() -> None:
    def counted(request: LlmRequest) -> Any:
        return LlmResponse(content=Content.model("hi"), turn_complete=True,
                           usage_metadata=UsageMetadata(prompt_token_count=10, candidates_token_count=3))

    case = EvalCase("tokens", app_or_agent=agent(counted), first_message="x",
                    user_agents=UserAgents(loop=scripted_user("human", ["again"])))
    result = await run_eval(case)
    assert result.token_usage is not None and (result.token_usage.input, result.token_usage.output) == (20, 6)
    assert EvalResult.model_validate_json(result.model_dump_json()) == result


class RecordingHost(LocalCaseHost):
    """The local host, recording every way drive_case reaches the world."""

    def __init__(self, case: EvalCase) -> None:
        super().__init__(case, runtime=FakeClock())
        self.calls: list[str] = []

    async def start(self, *, initial_state: dict[str, Any]) -> None:
        self.calls.append(f"start {sorted(initial_state)}")
        await super().start(initial_state=initial_state)

    async def run_system(self, message: Content, state_delta: dict[str, Any] | None, on_event: Any = None) -> list[Any]:
        self.calls.append(f"system {message.text or 'responses'}")
        return await super().run_system(message, state_delta)

    async def run_user_agent(self, agent: Any, message: Content) -> list[Any]:
        self.calls.append(f"user agent {agent.name}")
        return await super().run_user_agent(agent, message)


async def test_drive_case_reaches_the_world_only_through_its_host() -> None:
    case = _case("hosted", initial_state={"patient": {"age": 55}}, terminate_when=TerminateWhen(max_turns=2))
    host = RecordingHost(case)
    result = await drive_case(case, host, trial=7)
    # The user is asked after turn 2 too: had it ended the conversation there, the run would have completed.
    assert host.calls == ["start ['patient:age']", "system start", "user agent human", "system go on", "user agent human"]
    assert result.trial == 7 and result.turns == 2


def test_the_apps_a_worker_registers_find_every_agent_by_name() -> None:
    judge_case = _case("registry", metrics=[llm_judge(name="polite", prompt="Was it polite?",
                                                      model=agent(lambda r: "{}").model)])
    apps = case_apps(judge_case)
    assert apps.system.name == "eval:registry" and apps.users.name == "eval:registry:users"
    assert apps.users.find_agent("human") is judge_case.user_agents.loop
    assert judge_case.user_agents.loop.parent_agent is None  # held, not adopted
    assert apps.judges.find_agent("judge_polite") is not None
    tool = apps.system.find_agent("system").tools[0]  # type: ignore[union-attr]
    assert type(tool).__name__ == "InterceptedTool" and tool.decision == "passthrough"


class CarriedError(Exception):
    """Like Temporal's ApplicationError: the original type travels as ``type``."""

    def __init__(self, message: str, type: str) -> None:
        super().__init__(message)
        self.type = type


async def test_an_error_that_crossed_a_boundary_keeps_its_type_name() -> None:
    class DurableLikeHost(LocalCaseHost):
        async def run_system(self, message: Content, state_delta: dict[str, Any] | None, on_event: Any = None) -> list[Any]:
            raise CarriedError("Tool 'x' was called during eval but no mock was provided.", type="EvalToolError")

    case = _case("carried")
    result = await drive_case(case, DurableLikeHost(case))
    assert result.error is not None and (result.error.phase, result.error.error_type) == ("system", "EvalToolError")


async def test_the_api_takes_the_issues_positional_order_too() -> None:
    from adk_core.eval import Bridge, MetricResult

    system = agent(lambda r: text_response("hi"))
    case = EvalCase("positional", "all positional", system, {}, UserAgents(), Bridge(), {"session": {"k": 1}}, "x",
                    TerminateWhen(3), [metric("m", lambda t: MetricResult(True, 0.5, t.state["k"], ["ok"]))], 2)
    result = await run_eval(case)
    assert result.passed and len(result.trials) == 2 and result.metrics["m"] == MetricResult(True, 0.5, 1, ["ok"])
    assert MetricResult.model_validate_json(result.metrics["m"].model_dump_json()) == result.metrics["m"]
    try:
        EvalCase("no-system", first_message="x")
    except Exception as e:  # noqa: BLE001
        assert "app_or_agent= is required" in str(e)
    else:
        raise AssertionError("a case without a system must be refused")
