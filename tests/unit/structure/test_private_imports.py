"""adk_core's private modules and names (``_json``, ``_errors``, ``_helper``) are used only inside the
package that holds them; every other module goes through the package's public names."""

from __future__ import annotations

import ast

from tests.unit.structure.source_tree import ROOT, Module, imported_names, inside, is_private, modules


def private_imports_across_packages(owner_prefix: str) -> list[str]:
    """``file:line: name`` for each import of a private name owned by a package under ``owner_prefix``
    from a module outside that package."""
    found = []
    for module in modules():
        for line, name in imported_names(module):
            parts = name.split(".")
            first_private = next((i for i, part in enumerate(parts) if is_private(part)), None)
            if first_private is None:
                continue
            owner = ".".join(parts[:first_private])
            if inside(owner, owner_prefix) and not inside(module.name, owner):
                found.append(f"{module.rel}:{line}: {name} (private to {owner})")
    return found


def test_no_module_imports_a_private_name_of_another_adk_core_package():
    offenders = private_imports_across_packages("adk_core")
    assert not offenders, "import these through the owning package's public names:\n" + "\n".join(offenders)


def test_the_walker_resolves_relative_imports_and_lets_a_package_use_its_own_privates():
    memory = Module(
        ROOT / "adk_core/memory/sql.py",
        "adk_core.memory.sql",
        "adk_core.memory",
        ast.parse("from ..sql import _json\nfrom adk_core.sql._errors import store_errors\n"),
    )
    names = [name for _, name in imported_names(memory)]
    assert names == ["adk_core.sql._json", "adk_core.sql._errors.store_errors"]
    assert not inside(memory.name, "adk_core.sql")
    sql_init = next(m for m in modules() if m.name == "adk_core.sql")
    assert "adk_core.sql._json.dumps" in [name for _, name in imported_names(sql_init)]
    assert inside(sql_init.name, "adk_core.sql")
