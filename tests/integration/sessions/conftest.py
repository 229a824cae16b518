"""Fixtures for the session, memory and artifact stores: a migrated database per test module."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adk_core.sql import migrate


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def migrated_url(database_url: str) -> str:
    """The module's fresh database (tests/conftest.py), with the adk_* migrations applied once."""
    await migrate(database_url)
    return database_url


@pytest_asyncio.fixture
async def engine(migrated_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the module's database, disposed after the test."""
    engine = create_async_engine(migrated_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def app_name() -> str:
    """A fresh app name per test, so tests sharing a module database never see each other's rows."""
    return f"app-{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=["in_memory", pytest.param("postgres", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """Runs a test on both backends: ("in_memory", None) or ("postgres", the migrated database URL).

    Sync on purpose: the in-memory run must not start Postgres, so the URL is fetched lazily here.
    """
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("migrated_url")
    return "in_memory", None
