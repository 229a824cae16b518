"""Shared fixtures: the embedded Temporal dev server and Postgres (adkt.embedded).

Each server starts the first time a test asks for it and runs until the session ends, so
`pytest tests/unit` starts nothing. Everything runs on pytest-asyncio's session event loop
(pyproject: asyncio_default_fixture_loop_scope = "session").
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.converter import DataConverter

from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_server() -> AsyncIterator[TemporalDevServer]:
    """A headless, in-memory Temporal dev server on free ports, shared by the whole session."""
    async with TemporalDevServer(port=0, headless=True, extra_args=TEMPORAL_DEV_ARGS) as server:
        yield server


@pytest.fixture(scope="session")
def temporal_data_converter() -> DataConverter:
    """The data converter `temporal_client` uses.

    The hook for the project's own converter: return it here (or override this fixture in a nested
    conftest), and every test client and worker built on `temporal_client` follows.
    """
    return DataConverter.default


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_client(
    temporal_server: TemporalDevServer, temporal_data_converter: DataConverter
) -> Client:
    """A client of `temporal_server`, in its namespace."""
    return await Client.connect(
        temporal_server.address,
        namespace=temporal_server.namespace,
        data_converter=temporal_data_converter,
    )


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def postgres(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedPostgres]:
    """An embedded Postgres under the session's temporary folder, without fsync (data is throwaway)."""
    async with EmbeddedPostgres(tmp_path_factory.mktemp("postgres"), durable=False) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def database_url(postgres: EmbeddedPostgres, request: pytest.FixtureRequest) -> str:
    """SQLAlchemy URL of a fresh database for the requesting test module.

    Named after the module for readable server logs. Not dropped afterwards: engines the tests
    forgot to dispose would block DROP DATABASE, and the whole cluster is deleted with the session.
    """
    module = re.sub(r"\W", "_", request.module.__name__.rsplit(".", 1)[-1])[:40]
    return await postgres.create_database(f"{module}_{uuid.uuid4().hex[:8]}")
