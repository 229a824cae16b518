"""Cached prompt tokens in the metrics (issue 23, item 4): adk_model_tokens_total{type="cached_input"}
and {type="cache_write_input"}, parts of type="input", and the call's cost at the cached prices."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from temporalio.runtime import TelemetryConfig

from adk_core.models import LlmResponse, UsageMetadata
from adk_core.models.pricing import COST_KEY, ModelPrice, PriceTable
from adk_core.sessions import InMemorySessionService
from adk_temporal.activities.adk_activities import AdkActivities
from adk_temporal.metrics import MODEL_TOKENS, ActivityMetrics, runtime_with_metrics


def test_cached_and_written_prompt_tokens_are_series_of_their_own() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runtime = runtime_with_metrics(TelemetryConfig(), port, host="127.0.0.1")
    price = ModelPrice(input=3.0, output=15.0, cached_input=0.3, cache_write_input=3.75)
    activities = AdkActivities(InMemorySessionService(), prices=PriceTable({"claude-x": price}))
    usage = UsageMetadata(prompt_token_count=5100, cached_content_token_count=3000, cache_creation_token_count=2000,
                          candidates_token_count=10)  # fmt: skip
    response = LlmResponse(usage_metadata=usage)

    activities._count_usage(
        [response], "claude-x", ActivityMetrics.on(runtime.metric_meter), {"model": "claude-x"}
    )

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    series = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(MODEL_TOKENS)
    }

    def tokens(kind: str) -> float:
        return next(v for k, v in series.items() if f'type="{kind}"' in k)

    assert (tokens("input"), tokens("cached_input"), tokens("cache_write_input"), tokens("output")) == (
        5100,
        3000,
        2000,
        10,
    )
    assert response.custom_metadata is not None
    assert response.custom_metadata[COST_KEY] == pytest.approx(
        (100 * 3.0 + 3000 * 0.3 + 2000 * 3.75 + 10 * 15.0) / 1e6
    )
