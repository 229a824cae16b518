"""What adk-temporal installs never takes a name that a user's Temporal project uses for its own files
(adk_temporal/__init__.py): Temporal's samples call them workflows.py, activities.py and worker.py."""

from __future__ import annotations

import ast
import tomllib

from setuptools import find_packages

from tests.unit.structure.source_tree import ROOT

USERS_NAMES = {"workflows", "activities", "worker"}


def test_installed_top_level_names_are_ours_alone() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py-modules" not in config, "a top-level module would be installed beside the packages"
    packages = find_packages(str(ROOT), include=config["packages"]["find"]["include"])
    assert {p.split(".")[0] for p in packages} == {"adk_core", "adk_temporal", "adkt"}
    assert {"adk_temporal.workflows", "adk_temporal.activities"} <= set(packages)
    assert (ROOT / "adk_temporal" / "worker.py").is_file()


def test_no_code_of_ours_imports_a_users_module_name() -> None:
    wrong = []
    for folder in ("adk_core", "workflows", "activities", "adk_temporal", "adkt", "examples", "bench", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "adk_temporal/workflows" in path.as_posix() or "adk_temporal/activities" in path.as_posix():
                continue  # the symlinks: the same files as workflows/ and activities/
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else [])
                wrong += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in USERS_NAMES]
    assert wrong == [], "import these as adk_temporal.workflows / .activities / .worker"


def test_the_worker_script_is_thin() -> None:
    tree = ast.parse((ROOT / "worker.py").read_text())
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    assert defined == [], "library code belongs in adk_temporal/worker.py, not the script"
