"""The eval cases a worker serves, found by import reference, and registering the apps they run.

A reference names cases the way ``--app`` names apps, so any worker can rebuild them:

    module:attr     an EvalCase, or a list / tuple of them
    module          its ``cases`` attribute if it has one, else every EvalCase defined at module level
    path/to/file.py[:attr]   the same, for a file (turned into a module name relative to the
                    working directory, so workers started there import the same module)

Cases must be module attributes, not built per call: the apps a case runs are cached per case
object (adk_core.eval.apps), and the workflow, its activities and every retry must find the same
objects by name. Two different cases with one name on one worker would swap each other's tools,
so registering a second one is refused.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adk_core.errors import ConfigurationError
from adk_core.eval import CaseApps, EvalCase, case_apps

from .apps import AppRegistry


def normalize_ref(ref: str) -> str:
    """``ref`` in module form: a file path becomes a module name (relative to the working directory
    when the file is below it, else a module loaded from the file under a name of its own)."""
    spec, sep, attr = ref.partition(":")
    if not spec.endswith(".py"):
        return ref
    path = Path(spec).resolve()
    if not path.is_file():
        raise ConfigurationError(f"eval cases {ref!r}: no such file {spec!r}")
    try:
        relative = path.relative_to(Path(os.getcwd()).resolve())
        module = ".".join(relative.with_suffix("").parts)
    except ValueError:
        module = f"_adk_eval_{path.stem}"
        if module not in sys.modules:
            loader = importlib.util.spec_from_file_location(module, path)
            assert loader is not None and loader.loader is not None
            loaded = importlib.util.module_from_spec(loader)
            sys.modules[module] = loaded
            loader.loader.exec_module(loaded)
    return f"{module}{sep}{attr}"


def load_cases(ref: str) -> list[EvalCase]:
    """The cases ``ref`` names, in order (unique names)."""
    return list(_checked(ref).cases)


def _checked(ref: str) -> _Listed:
    module_name, _, attr = normalize_ref(ref).partition(":")
    try:
        # __import__, not importlib.import_module: inside a workflow, Temporal's sandbox hooks only
        # __import__, and only through it does imports_passed_through() hand back the module the
        # worker already imported (importlib would run the module again inside the sandbox).
        module = __import__(module_name, fromlist=["__name__"])
    except ImportError as e:
        raise ConfigurationError(
            f"cannot import eval cases {ref!r}: {e}; run from the folder that contains the module (workers too)"
        ) from None
    if attr:
        if not hasattr(module, attr):
            raise ConfigurationError(f"module {module_name!r} has no attribute {attr!r} (eval cases {ref!r})")
        value = getattr(module, attr)
    elif hasattr(module, "cases"):
        value = module.cases
    else:
        value = [v for v in vars(module).values() if isinstance(v, EvalCase)]
    listed = _LISTED.get(ref)
    if listed is not None and listed.value is not None and listed.value is value and len(listed.value) == len(listed.cases):
        return listed  # checked already: every trial of a suite finds its case here
    cases = [value] if isinstance(value, EvalCase) else list(value) if isinstance(value, list | tuple) else None
    if not cases or not all(isinstance(c, EvalCase) for c in cases):
        raise ConfigurationError(
            f"eval cases {ref!r} name a {type(value).__name__}; point at an EvalCase or a list of EvalCases "
            "(module:attr), or a module with a `cases` list"
        )
    # Counted, not names.count() per name: a 10,000-case suite is listed again by every trial.
    duplicates = sorted(name for name, n in Counter(c.name for c in cases).items() if n > 1)
    if duplicates:
        raise ConfigurationError(f"eval cases {ref!r}: case names must be unique; {duplicates} repeat")
    listed = _Listed(value if isinstance(value, list | tuple) else None, cases, {c.name: c for c in cases})
    if listed.value is not None:
        _LISTED[ref] = listed
    return listed


@dataclass(frozen=True)
class _Listed:
    value: Sequence[EvalCase] | None
    """The module's list itself (None: not a list, never kept): another list (the module reloaded) or
    another length than ``cases`` lists it again."""
    cases: list[EvalCase]
    by_name: dict[str, EvalCase]


_LISTED: dict[str, _Listed] = {}
"""Checked lists by reference: each trial of a suite finds its case by name without checking the
whole list again (O(cases) per trial made a 10,000-case suite quadratic). Workflows share it (the
module is passed through the sandbox); every entry is derived from the module's own objects, so a
replay finds the same case."""


def find_case(ref: str, name: str) -> EvalCase:
    case = _checked(ref).by_name.get(name)
    if case is not None:
        return case
    raise ConfigurationError(f"eval cases {ref!r} have no case named {name!r}; the worker may run older code")


def register_case(case: EvalCase, apps: AppRegistry) -> CaseApps:
    """Register the case's three apps with this worker's ``apps`` (again: nothing changes)."""
    case_app_set = case_apps(case)
    for app in case_app_set.all():
        if app.name in apps and apps.get(app.name) is not app:
            raise ConfigurationError(
                f"this worker already serves a different eval case named {case.name!r} (app {app.name!r}); "
                "give each case a unique name, and define cases once at module level"
            )
        apps.register(app)
    return case_app_set


def register_cases(refs: Sequence[str], apps: AppRegistry) -> list[EvalCase]:
    """Import and register every case of ``refs`` (a worker does this at start, so its activities
    find the cases' agents and tools even before any eval workflow ran on it), and allow their
    suites (``apps.eval_suites``): a worker imports no other suite named in workflow input."""
    apps.eval_suites.allow(refs)
    cases = [case for ref in refs for case in load_cases(ref)]
    for case in cases:
        register_case(case, apps)
    return cases
