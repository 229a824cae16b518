"""Reading the project's own source for the one-owner tests: every module of the shipped layers, parsed once."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# The layers users install or run (tests may reach into private helpers to test them).
LAYERS = (
    "adk_core", "workflows", "activities", "adk_temporal/__init__.py", "adk_temporal/worker.py",
    "adkt", "worker.py", "bench", "examples",
)
# Folders installed under another name (adk_temporal/__init__.py): their modules are named as imported.
INSTALLED_AS = {"workflows": "adk_temporal.workflows", "activities": "adk_temporal.activities"}


@dataclass(frozen=True)
class Module:
    path: Path
    name: str  # dotted, e.g. "adk_core.sql.engine"
    package: str  # the package relative imports resolve against
    tree: ast.Module

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


@functools.cache
def modules() -> tuple[Module, ...]:
    found = []
    for layer in LAYERS:
        base = ROOT / layer
        paths = [base] if base.suffix == ".py" else sorted(base.rglob("*.py"))
        for path in paths:
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            if parts and parts[0] in INSTALLED_AS:
                parts[0:1] = INSTALLED_AS[parts[0]].split(".")
            name = ".".join(parts)
            package = name if is_package else name.rpartition(".")[0]
            found.append(Module(path, name, package, ast.parse(path.read_text(), str(path))))
    assert found, f"no source found under {ROOT}"
    return tuple(found)


def imported_names(module: Module) -> list[tuple[int, str]]:
    """Every dotted name the module imports, relative imports made absolute: ``from .a import b`` in
    ``pkg.mod`` gives ``pkg.a.b``."""
    names = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
    return names


def is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def inside(module_name: str, package: str) -> bool:
    return module_name == package or module_name.startswith(package + ".")
