"""The metrics endpoint's runtime: the SDK's Prometheus exporter with our buckets, or a clear error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from temporalio.runtime import TelemetryConfig

from adk_core.errors import ConfigurationError
from adk_temporal.metrics import TURN_DURATION, TurnMetrics, runtime_with_metrics

ROOT = Path(__file__).resolve().parents[2]


def test_a_taken_port_is_a_configuration_error_naming_the_option() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match="--metrics-port"):
            runtime_with_metrics(TelemetryConfig(), port, host="127.0.0.1")


def test_histograms_are_in_seconds_with_our_buckets() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runtime = runtime_with_metrics(TelemetryConfig(), port, host="127.0.0.1")
    TurnMetrics.on(runtime.metric_meter).duration.record(0.3, {"app": "a"})
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert f'{TURN_DURATION}_bucket{{app="a",service_name="temporal-core-sdk",le="0.25"}} 0' in text
    assert f'{TURN_DURATION}_bucket{{app="a",service_name="temporal-core-sdk",le="0.5"}} 1' in text
    # Without a port: the SDK's default no-op meter, no exporter.
    assert runtime_with_metrics(TelemetryConfig(), None).metric_meter.__class__.__name__ == "_NoopMetricMeter"


def test_adkt_worker_refuses_a_bad_price_file_before_connecting(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."m"]\ninput = 1\n')  # no output price
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    result = subprocess.run(
        [sys.executable, "-m", "adkt.main", "worker", "--app", "examples.w1:app", "--address", "127.0.0.1:1",
         "--database-url", "postgresql+psycopg://nobody@127.0.0.1:1/none", "--prices", str(prices)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "the price of model 'm' is invalid" in result.stderr and "Traceback" not in result.stderr
