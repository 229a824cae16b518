"""Retention and content-addressed payloads: a payload stored again (the same bytes: a tool's
large static result in another conversation, without encryption) is young again, so a retention
pass whose list of referenced keys was read before the new history referenced it keeps it."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
import sqlalchemy as sa
from temporalio.api.common.v1 import Payload

from adk_core.sql import migrate, open_engine
from adk_core.sql.retention import prune_payloads
from adk_core.sql.schema import payloads
from adk_temporal.workflows.payload_storage import PostgresPayloadDriver

pytestmark = pytest.mark.integration


async def test_a_payload_stored_again_is_not_pruned_as_old(database_url: str) -> None:
    await migrate(database_url)
    engine = open_engine(database_url)
    driver = PostgresPayloadDriver(engine)
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'"the same large document"' + b" " * 64)
    context = cast(Any, None)  # the driver does not read its context
    try:
        [claim] = await driver.store(context, [payload])
        key = claim.claim_data["sha256"]
        async with engine.begin() as conn:  # stored a day ago, its first history long gone
            await conn.execute(sa.update(payloads).where(payloads.c.sha256 == key).values(create_time=time.time() - 86400))
        # Another conversation stores the same bytes now; its history will reference them, but the
        # retention pass read the referenced keys before that history existed.
        await driver.store(context, [payload])
        await prune_payloads(engine, before=time.time() - 3600, referenced=set())
        async with engine.connect() as conn:
            kept = (await conn.execute(sa.select(payloads.c.sha256).where(payloads.c.sha256 == key))).scalar()
        assert kept == key, "a payload stored again a moment ago was pruned as an old unreferenced one"
    finally:
        async with engine.begin() as conn:
            await conn.execute(sa.delete(payloads).where(payloads.c.data == payload.SerializeToString()))
        await engine.dispose()


async def test_equal_values_in_one_store_are_one_row(database_url: str) -> None:
    """Two equal values in one call (a workflow returning the same large value twice) are one row."""
    await migrate(database_url)
    engine = open_engine(database_url)
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'"twice in one call"')
    try:
        claims = await PostgresPayloadDriver(engine).store(cast(Any, None), [payload, payload])
        assert claims[0].claim_data == claims[1].claim_data
        assert await PostgresPayloadDriver(engine).retrieve(cast(Any, None), claims) == [payload, payload]
    finally:
        async with engine.begin() as conn:
            await conn.execute(sa.delete(payloads).where(payloads.c.data == payload.SerializeToString()))
        await engine.dispose()
