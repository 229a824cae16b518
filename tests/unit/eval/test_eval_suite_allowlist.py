"""Which eval suites a worker may import (activities.eval_allow): only registered modules and what
is below them, checked without importing or reading anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adk_core.errors import ConfigurationError
from adk_temporal.activities.eval_allow import EvalSuites, suite_module, working_directory_modules


def test_references_name_their_module_without_importing_it(tmp_path: Path) -> None:
    assert suite_module("pkg.evals:cases") == "pkg.evals"
    assert suite_module("pkg.evals") == "pkg.evals"
    assert suite_module("tests/integration/eval_apps.py:imported") == "tests.integration.eval_apps"
    outside = tmp_path / "planted.py"  # does not even exist: nothing is read
    assert suite_module(f"{outside}:cases") == str(outside.resolve())


def test_registered_modules_and_what_is_below_them_are_allowed_nothing_else() -> None:
    suites = EvalSuites(["examples.eval_chest_pain:chest_pain_case", "tests.integration"])
    for allowed in ("examples.eval_chest_pain", "examples.eval_chest_pain:other", "tests.integration.eval_apps:imported",
                    "tests/integration/eval_apps.py:imported"):
        suites.check(allowed)
    for refused in ("examples", "examples.other:x", "tests.integrationx:y", "os:system", "/tmp/x.py:cases"):
        with pytest.raises(ConfigurationError, match="is not registered on this worker") as error:
            suites.check(refused)
        assert "adkt worker --eval" in str(error.value) and "examples.eval_chest_pain, tests.integration" in str(error.value)


def test_workflow_code_takes_module_references_only() -> None:
    suites = EvalSuites(["tests.integration"])
    suites.check("tests.integration.eval_apps:imported", from_workflow=True)
    with pytest.raises(ConfigurationError):
        suites.check("tests/integration/eval_apps.py:imported", from_workflow=True)
    EvalSuites(any_suite=True).check("anything:at_all", from_workflow=True)


def test_a_worker_with_nothing_registered_refuses_every_suite() -> None:
    with pytest.raises(ConfigurationError, match="allows eval suites from: none"):
        EvalSuites().check("examples.eval_chest_pain")


def test_adkt_dev_allows_the_projects_own_modules(tmp_path: Path) -> None:
    (tmp_path / "evals.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "notes").mkdir()
    (tmp_path / ".venv").mkdir()
    assert working_directory_modules(tmp_path) == ["evals", "pkg"]
    assert os.getcwd() != str(tmp_path)


def test_adkt_worker_takes_an_allowlist_and_the_refusal_names_it() -> None:
    from typer.testing import CliRunner

    from adkt.main import app

    result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--eval-suite" in result.output
    with pytest.raises(ConfigurationError, match="adkt worker --eval-suite shop.evals"):
        EvalSuites(["examples"]).check("shop.evals:cases")
