"""The deployment files agree with the worker they run (no Docker engine or cluster runs here):
probes hit the routes and port the health endpoint serves, the grace period outlasts the worker's
graceful timeout, versioned workers get both halves of their version, and the app image builds on
the worker image."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from adk_temporal.health import health_app
from adk_temporal.worker import DEFAULT_GRACEFUL_SHUTDOWN

ROOT = Path(__file__).resolve().parents[2]


def _routes() -> set[str]:
    return {route.path for route in health_app(None, None).routes}  # type: ignore[arg-type, attr-defined]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container["env"]}


def test_kubernetes_probes_match_the_health_endpoint() -> None:
    deployment = yaml.safe_load((ROOT / "deploy" / "k8s" / "worker.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = _env(container)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["health"] == int(env["ADK_HEALTH_PORT"])
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["path"] in _routes()
        assert container[probe]["httpGet"]["port"] == "health"
    assert pod["terminationGracePeriodSeconds"] > float(env["ADK_GRACEFUL_SHUTDOWN_SECONDS"])
    assert env["ADK_DEPLOYMENT_NAME"] and env["ADK_BUILD_ID"] == deployment["metadata"]["labels"]["build"]


def test_compose_worker_is_healthchecked_and_stops_gracefully() -> None:
    worker = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["worker"]
    env = worker["environment"]
    port = env["ADK_HEALTH_PORT"]
    check = " ".join(worker["healthcheck"]["test"])
    assert f"127.0.0.1:{port}/readyz" in check and "/readyz" in _routes()
    grace = int(re.fullmatch(r"(\d+)s", worker["stop_grace_period"]).group(1))  # type: ignore[union-attr]
    assert grace > float(env["ADK_GRACEFUL_SHUTDOWN_SECONDS"])
    assert {"ADK_DEPLOYMENT_NAME", "ADK_BUILD_ID"} <= set(env)


def test_the_default_graceful_timeout_fits_kubernetes_default_grace_period() -> None:
    assert DEFAULT_GRACEFUL_SHUTDOWN.total_seconds() <= 30


def test_the_app_image_builds_on_the_worker_image_with_its_version() -> None:
    text = (ROOT / "deploy" / "app" / "Dockerfile").read_text()
    assert "ARG BASE=adk-temporal-worker:local" in text and "FROM ${BASE}" in text
    for name in ("ADK_APP", "ADK_DEPLOYMENT_NAME", "ADK_BUILD_ID"):
        assert f"{name}=${{{name}}}" in text
    worker_image = (ROOT / "Dockerfile").read_text()
    assert "COPY adk_temporal ./adk_temporal" in worker_image and "COPY worker.py" not in worker_image
