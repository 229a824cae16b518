"""Which eval suites a worker may import: only those it registered.

An eval suite reaches a worker as a reference in workflow input (``EvalSuiteInput.suite``,
``EvalCaseInput.suite``). Importing it runs its module's code, so whoever could start a workflow
could run code on the worker. A worker therefore imports only suites under the modules it was
given: ``adkt worker --eval module:attr`` / ``build_worker(eval_cases=[...])`` (imported at start)
or ``build_worker(eval_suites=[...])`` (module or package names, imported on first use). Anything
else is refused before any import, with a ConfigurationError that names what to register.

Nothing here imports or reads a file; ``suite_module`` only names the module a reference points at.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from adk_core.errors import ConfigurationError


def suite_module(ref: str) -> str:
    """The module ``ref`` names, without importing anything: ``module:attr`` and ``module`` give
    the module; a file path gives its module name relative to the working directory (as workers
    import it), or, for a file outside it, its resolved path."""
    spec = ref.partition(":")[0]
    if not spec.endswith(".py"):
        return spec
    path = Path(spec).resolve()
    try:
        return ".".join(path.relative_to(Path(os.getcwd()).resolve()).with_suffix("").parts)
    except ValueError:
        return str(path)


class EvalSuites:
    """The modules (and packages) whose eval suites a worker may import. ``any_suite=True`` allows
    every reference: only for replaying recorded histories, which start nothing new."""

    def __init__(self, entries: Iterable[str] = (), *, any_suite: bool = False) -> None:
        self._modules: set[str] = set()
        self.any_suite = any_suite
        self.allow(entries)

    def allow(self, entries: Iterable[str]) -> None:
        """Allow the modules of these references (``module:attr``, ``module``, a package name, a file path)."""
        self._modules.update(suite_module(ref) for ref in entries)

    def allows(self, ref: str, *, from_workflow: bool = False) -> bool:
        if self.any_suite:
            return True
        if from_workflow and ref.partition(":")[0].endswith(".py"):
            return False  # workflow code cannot resolve paths; workflows pass module references on
        module = suite_module(ref)
        return any(module == m or module.startswith(m + ".") for m in self._modules)

    def check(self, ref: str, *, from_workflow: bool = False) -> None:
        """Raise ConfigurationError (non-retryable in activities, failing an eval workflow once)
        unless this worker registered ``ref``'s module."""
        if self.allows(ref, from_workflow=from_workflow):
            return
        module = ref.partition(":")[0] if from_workflow else suite_module(ref)
        allowed = ", ".join(sorted(self._modules)) or "none"
        raise ConfigurationError(
            f"eval suite {ref!r} is not registered on this worker, so it was not imported (a suite named in "
            f"workflow input would run its module's code here). Register it: start the worker with "
            f"`adkt worker --eval {ref}` (or build_worker(..., eval_cases=[{ref!r}])), or allow its module with "
            f"`adkt worker --eval-suite {module}` (build_worker(..., eval_suites=[{module!r}])). "
            f"This worker allows eval suites from: {allowed}"
        )

    def modules(self) -> list[str]:
        return sorted(self._modules)


def working_directory_modules(folder: str | Path | None = None) -> list[str]:
    """The top-level modules and packages of ``folder`` (the working directory by default): what
    ``adkt dev`` lets eval suites come from, so a suite of the project it serves runs there with no
    registration, and nothing outside the project (an installed module, a file elsewhere) does."""
    base = Path(folder or os.getcwd())
    found = [p.stem for p in base.glob("*.py")]
    found += [p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    return sorted(n for n in found if n.isidentifier())
