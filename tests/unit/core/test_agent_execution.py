"""AgentExecution: an agent's durable-run options as frozen, typed data, and the old ``durable`` dict."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from temporalio.common import RetryPolicy

from adk_core import AgentExecution, LlmAgent, ParallelAgent
from adk_core.errors import ConfigurationError
from adk_core.tools import RetryOptions
from adk_temporal.workflows._retry import retry_policy


def test_agents_default_to_in_parent_runs_with_bounded_model_retries():
    execution = LlmAgent(name="a", model="m").execution
    assert execution == AgentExecution()
    assert not execution.child_workflow
    assert execution.model_timeout == timedelta(minutes=10)
    assert execution.model_heartbeat_timeout == timedelta(seconds=10)
    assert retry_policy(execution.model_retry) == RetryPolicy(
        initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=60), maximum_attempts=8
    )


def test_typed_options_reach_every_kind_of_agent_and_are_frozen():
    execution = AgentExecution(child_workflow=True, model_task_queue="gpu")
    assert LlmAgent(name="a", model="m", execution=execution).execution is execution
    assert ParallelAgent(name="p", execution=execution).execution is execution
    with pytest.raises(dataclasses.FrozenInstanceError):
        execution.child_workflow = False  # type: ignore[misc]


def test_the_old_dict_is_converted_with_a_warning_that_shows_the_new_form():
    with pytest.warns(DeprecationWarning, match=r"execution=AgentExecution\(child_workflow=True\)"):
        agent = LlmAgent(name="a", model="m", durable={"child_workflow": True})
    assert agent.execution == AgentExecution(child_workflow=True)


def test_an_old_temporal_retry_policy_becomes_our_retry_options():
    policy = RetryPolicy(maximum_attempts=3, non_retryable_error_types=["Bad"])
    with pytest.warns(DeprecationWarning):
        agent = LlmAgent(name="a", model="m", durable={"model_retry": policy, "model_timeout": timedelta(seconds=5)})
    assert agent.execution.model_retry == RetryOptions(maximum_attempts=3, non_retryable_error_types=("Bad",))
    assert agent.execution.model_timeout == timedelta(seconds=5)
    assert retry_policy(agent.execution.model_retry) == policy


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"durable": {"child_workflows": True}}, r"no option 'child_workflows'.*child_workflow"),
        ({"durable": {"model_retry": 3}}, r"model_retry must be a RetryOptions"),
        ({"durable": ["child_workflow"]}, r"execution=AgentExecution\(child_workflow=True"),
        ({"execution": {"child_workflow": True}}, r"execution must be an AgentExecution, got dict"),
        ({"execution": AgentExecution(), "durable": {}}, r"both execution= and durable="),
    ],
)
def test_wrong_options_say_how_to_write_them(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        LlmAgent(name="a", model="m", **kwargs)


def test_retry_options_convert_field_by_field():
    options = RetryOptions(
        initial_interval=timedelta(milliseconds=200),
        backoff_coefficient=1.5,
        maximum_interval=timedelta(seconds=3),
        maximum_attempts=4,
        non_retryable_error_types=("X", "Y"),
    )
    assert retry_policy(options) == RetryPolicy(
        initial_interval=timedelta(milliseconds=200),
        backoff_coefficient=1.5,
        maximum_interval=timedelta(seconds=3),
        maximum_attempts=4,
        non_retryable_error_types=["X", "Y"],
    )
