"""Fixtures for the session, memory and artifact stores: a migrated database per test module."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adk_core.encryption import KEYS_ENV, KEYS_FILE_ENV
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


SEALED_KEYS = "contract-k1:" + base64.b64encode(bytes(range(32))).decode()
"""The key ring the "postgres_sealed" backend runs under (fixed: these tests check behaviour, not secrecy)."""


@pytest.fixture(
    params=[
        "in_memory",
        pytest.param("postgres", marks=pytest.mark.integration),
        pytest.param("postgres_sealed", marks=pytest.mark.integration),
    ]
)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str | None]:
    """Runs a test on every backend: ("in_memory", None), or ("postgres", the migrated database URL)
    in clear and encrypted at rest (the stores take the environment's keys, as in a worker).

    Sync on purpose: the in-memory run must not start Postgres, so the URL is fetched lazily here.
    """
    if request.param == "in_memory":
        return "in_memory", None
    monkeypatch.delenv(KEYS_FILE_ENV, raising=False)
    if request.param == "postgres_sealed":
        monkeypatch.setenv(KEYS_ENV, SEALED_KEYS)
    else:
        monkeypatch.delenv(KEYS_ENV, raising=False)
    return "postgres", request.getfixturevalue("migrated_url")
