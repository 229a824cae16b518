"""Durable-run options have one owner each: agents' options are AgentExecution (no untyped ``durable``
dict read by key), and RetryOptions become Temporal's RetryPolicy in one place (workflows/_retry.py)."""

from __future__ import annotations

import ast

from tests.unit.structure.source_tree import modules

ENGINE_LAYERS = ("adk_core", "adk_temporal")
RETRY_CONVERTER = "workflows/_retry.py"
# Fields only a RetryOptions -> RetryPolicy conversion reads.
RETRY_ONLY_FIELDS = {"backoff_coefficient", "non_retryable_error_types", "initial_interval"}


def _engine_modules():
    return [m for m in modules() if m.name.split(".")[0] in ENGINE_LAYERS]


def test_no_agent_option_is_read_from_a_durable_dict():
    reads = [
        f"{m.rel}:{node.lineno}"
        for m in _engine_modules()
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Attribute) and node.attr == "durable"
    ]
    assert not reads, "read agent options from agent.execution (AgentExecution), not agent.durable: " + ", ".join(reads)


def test_retry_options_become_a_retry_policy_only_in_workflows_retry():
    readers = [
        f"{m.rel}:{node.lineno}: .{node.attr}"
        for m in _engine_modules()
        if m.rel != RETRY_CONVERTER
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Attribute) and node.attr in RETRY_ONLY_FIELDS
    ]
    assert not readers, f"convert RetryOptions with {RETRY_CONVERTER}'s retry_policy(): " + ", ".join(readers)
    converter = next(m for m in _engine_modules() if m.rel == RETRY_CONVERTER)
    assert {n.attr for n in ast.walk(converter.tree) if isinstance(n, ast.Attribute)} >= RETRY_ONLY_FIELDS
