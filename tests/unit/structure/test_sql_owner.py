"""The SQL layer has one owner, adk_core.sql: it alone opens engines, declares tables and holds the
Alembic history; every store (sessions, memory, artifacts, eval results, simulator, payloads) and
every tool (adkt, bench) goes through it."""

from __future__ import annotations

import ast

from tests.unit.structure.source_tree import ROOT, Module, modules

OWNER = "adk_core.sql"
ENGINE_FACTORIES = {"create_async_engine", "create_engine"}
SCHEMA_CONSTRUCTORS = {"Table", "MetaData"}


def _sqlalchemy_calls(module: Module, names: set[str]) -> list[int]:
    """Lines calling one of ``names`` from SQLAlchemy: ``create_async_engine(...)`` imported from any
    sqlalchemy module, or ``sa.Table(...)`` through an alias of it (rich's Table is not SQLAlchemy's)."""
    imported: set[str] = set()  # local names bound to one of `names` from sqlalchemy
    aliases: set[str] = set()  # local names bound to a sqlalchemy module
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            imported |= {a.asname or a.name for a in node.names if a.name in names}
            aliases |= {a.asname or a.name for a in node.names if a.name not in names}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name.split(".")[0] == "sqlalchemy"}
    lines = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in imported:
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr in names:
            root = func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                lines.append(node.lineno)
    return lines


def _outside_owner() -> list[Module]:
    return [m for m in modules() if not (m.name == OWNER or m.name.startswith(OWNER + "."))]


def test_only_adk_core_sql_opens_engines():
    found = [f"{m.rel}:{line}" for m in _outside_owner() for line in _sqlalchemy_calls(m, ENGINE_FACTORIES)]
    assert not found, "open engines with adk_core.sql.open_engine(url, **kwargs): " + ", ".join(found)


def test_only_adk_core_sql_declares_tables():
    found = [f"{m.rel}:{line}" for m in _outside_owner() for line in _sqlalchemy_calls(m, SCHEMA_CONSTRUCTORS)]
    assert not found, "declare tables in adk_core/sql/schema.py (one metadata, one migration history): " + ", ".join(
        found
    )


def test_one_alembic_history_under_adk_core_sql():
    envs = sorted(
        p.relative_to(ROOT).as_posix()
        for layer in ("adk_core", "workflows", "activities", "adkt", "bench", "examples")
        for p in (ROOT / layer).rglob("migrations/env.py")
    )
    assert envs == ["adk_core/sql/migrations/env.py"]


def test_the_walker_tells_sqlalchemy_from_lookalikes():
    code = (
        "import sqlalchemy as sa\nfrom sqlalchemy.ext.asyncio import create_async_engine as make\n"
        "from rich.table import Table\nsa.Table('t', sa.MetaData())\nmake('u')\nTable(title='x')\n"
    )
    fake = Module(ROOT / "fake.py", "fake", "", ast.parse(code))
    assert _sqlalchemy_calls(fake, SCHEMA_CONSTRUCTORS) == [4, 4]
    assert _sqlalchemy_calls(fake, ENGINE_FACTORIES) == [5]
