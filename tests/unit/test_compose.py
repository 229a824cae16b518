"""docker-compose.yml works as written, checked without Docker (no engine runs here): the Temporal
server has the features AdkClient uses, migrations and the namespace setup run once before the
worker, the worker serves the configured app from the mounted project, and every image is pinned.
tests/integration/test_compose_init.py runs the temporal-init step itself against a dev server."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from adkt.search_attributes import ADK_SEARCH_ATTRIBUTES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def _depends(service: dict[str, Any], on: str) -> str | None:
    return (service.get("depends_on") or {}).get(on, {}).get("condition")


def _host_path(service: dict[str, Any], container_path: str) -> Path:
    """The repository file behind ``container_path``, through the service's bind mounts."""
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if container_path.startswith(target.rstrip("/") + "/"):
            return ROOT / source / container_path[len(target.rstrip("/")) + 1:]
    raise AssertionError(f"{container_path} is not under a bind mount of {service}")


def _client_uses(text: str) -> bool:
    return text in (ROOT / "adkt" / "client.py").read_text()


def test_temporal_server_enables_what_the_client_uses(services: dict[str, Any]) -> None:
    temporal = services["temporal"]
    path = temporal["environment"]["DYNAMIC_CONFIG_FILE_PATH"]
    container_path = path if path.startswith("/") else f"/etc/temporal/{path}"  # relative to the image's home
    config_file = _host_path(temporal, container_path)
    assert config_file.is_file(), f"{config_file} (DYNAMIC_CONFIG_FILE_PATH) does not exist"
    config = yaml.safe_load(config_file.read_text())

    def enabled(key: str) -> bool:
        return any(entry.get("value") is True and not entry.get("constraints") for entry in config.get(key, []))

    # Every send is an update-with-start; its turn's result comes back by update.
    assert _client_uses("execute_update_with_start_workflow(")
    assert enabled("frontend.enableExecuteMultiOperation")
    assert enabled("frontend.enableUpdateWorkflowExecution")
    # Signal-with-start (busy conversations) is always on; the search attributes are registered by temporal-init.
    assert _client_uses("start_signal=")
    assert _client_uses("adk_search_attributes(")


def test_namespace_and_search_attributes_are_set_up_before_anyone_uses_them(services: dict[str, Any]) -> None:
    init = services["temporal-init"]
    assert _depends(init, "temporal") == "service_healthy"
    script = _host_path(init, init["entrypoint"][-1])
    text = script.read_text()
    assert "for name in " + " ".join(key.name for key in ADK_SEARCH_ATTRIBUTES) + "; do" in text
    assert '--name "$name" --type Keyword' in text
    assert init["environment"]["NAMESPACE"] == services["worker"]["environment"]["TEMPORAL_NAMESPACE"]
    for name in ("worker", "temporal-ui"):
        assert _depends(services[name], "temporal-init") == "service_completed_successfully", name

    schema = services["temporal-schema"]
    assert _host_path(schema, schema["entrypoint"][-1]).is_file()
    assert _depends(services["temporal"], "temporal-schema") == "service_completed_successfully"
    assert _depends(schema, "temporal-db") == "service_healthy"


def test_migrations_run_once_before_the_worker(services: dict[str, Any]) -> None:
    migrate, worker = services["migrate"], services["worker"]
    assert migrate["command"] == ["adkt", "migrate"]
    assert migrate["image"] == worker["image"] and migrate["build"] == worker["build"], "the worker's own image"
    assert migrate["environment"]["ADK_DATABASE_URL"] == worker["environment"]["ADK_DATABASE_URL"]
    assert _depends(migrate, "sessions-db") == "service_healthy"
    assert _depends(worker, "migrate") == "service_completed_successfully"
    assert migrate.get("restart", "no") != "always" and "unless-stopped" not in migrate.get("restart", ""), (
        "a one-shot step must not be restarted after it succeeded"
    )
    assert "migrate" not in (ROOT / "Dockerfile").read_text().split("CMD", 1)[1], "the image serves; compose migrates"


def test_worker_serves_the_configured_app_from_the_mounted_project(services: dict[str, Any]) -> None:
    worker = services["worker"]
    assert worker["environment"]["ADK_APP"].startswith("${ADK_APP:-")
    default_app = worker["environment"]["ADK_APP"][len("${ADK_APP:-"):-1]
    assert "${ADK_PROJECT_DIR:-.}:/app:ro" in worker["volumes"]
    module, _, attr = default_app.partition(":")
    assert (ROOT / (module.replace(".", "/") + ".py")).is_file() and attr, f"default app {default_app} is in the repo"
    command = " ".join(worker["command"]).replace("$$", "$")  # compose's escape for a literal $
    assert re.search(r'exec adkt worker --app "\$ADK_APP"', command), command
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "WORKDIR /app" in dockerfile and "COPY examples" not in dockerfile
    assert "ENV ADK_APP" not in dockerfile, "no built-in default app: the image serves what it is told to"


def test_every_image_is_pinned(services: dict[str, Any]) -> None:
    temporal_versions = set()
    for name, service in services.items():
        image = service.get("image")
        assert image, f"{name} has no image"
        repository, _, tag = image.rpartition(":")
        assert repository and tag and tag != "latest", f"{name}: {image} is not pinned"
        if service.get("build"):
            continue  # built here
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", tag), f"{name}: {image} should name an exact release"
        if repository in ("temporalio/server", "temporalio/admin-tools"):
            temporal_versions.add(tag)
    assert len(temporal_versions) == 1, f"server and admin-tools releases differ: {temporal_versions}"


def test_setup_scripts_are_valid_sh() -> None:
    for script in (ROOT / "deploy" / "temporal").glob("*.sh"):
        checked = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
        assert checked.returncode == 0, f"{script}: {checked.stderr}"


# --- exposure and secrets (issue 24, item 6) ---------------------------------------------------------
_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


def _with_defaults(text: str) -> str:
    """``text`` as compose reads it with no variables set: ``${VAR:-default}`` becomes the default."""
    return _INTERPOLATION.sub(lambda m: m[3] if m[2] == "-" else f"<{m[1]}>", text)


def test_every_published_port_binds_loopback_unless_told_otherwise(services: dict[str, Any]) -> None:
    published = [(name, port) for name, service in services.items() for port in service.get("ports", [])]
    assert {name for name, _ in published} == {"temporal", "temporal-ui", "sessions-db"}
    for name, port in published:
        host_ip = _with_defaults(str(port)).split(":")[0]
        assert host_ip == "127.0.0.1", f"{name} publishes {port} on every interface"
        assert str(port).startswith("${ADK_BIND_ADDRESS:-127.0.0.1}:"), f"{name}: one knob moves every port"


def _secret_values(services: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = []
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|PWD|DATABASE_URL", key):
                found.append((name, key, str(value)))
    return found


def test_no_password_is_baked_in_each_comes_from_the_env_file(services: dict[str, Any]) -> None:
    secrets = _secret_values(services)
    assert {key for _, key, _ in secrets} >= {"POSTGRES_PASSWORD", "POSTGRES_PWD", "SQL_PASSWORD", "ADK_DATABASE_URL"}
    for name, key, value in secrets:
        variables = [m for m in _INTERPOLATION.finditer(value) if "PASSWORD" in m[1]]
        assert variables, f"{name}.{key} holds a password literally: {value!r}"
        for variable in variables:
            assert variable[2] == "?" and ".env" in variable[3], (
                f"{name}.{key}: ${{{variable[1]}}} must be required (`:?`) with a message pointing at .env"
            )
    example = (ROOT / "deploy" / "env.example").read_text()
    for variable in {m[1] for _, _, value in secrets for m in _INTERPOLATION.finditer(value) if "PASSWORD" in m[1]}:
        assert re.search(rf"^{variable}=$", example, re.M), f"deploy/env.example lists {variable} with no value"
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_make_env_prints_a_fresh_password_for_every_required_variable() -> None:
    runs = [subprocess.run(["sh", str(ROOT / "deploy" / "make-env.sh")], capture_output=True, text=True, check=True)
            for _ in range(2)]
    made = [dict(line.split("=", 1) for line in run.stdout.splitlines()) for run in runs]
    required = set(re.findall(r"^(\w+)=$", (ROOT / "deploy" / "env.example").read_text(), re.M))
    assert set(made[0]) == required
    for name in required:
        assert re.fullmatch(r"[0-9a-f]{48}", made[0][name]), "URL-safe, 192 bits"
        assert made[0][name] != made[1][name]
