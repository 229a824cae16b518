"""Large Temporal payloads go to Postgres, and only a reference travels through Temporal.

Temporal refuses payloads over 2 MB and workflow histories over 50 MB. A model's long answer, a
big tool result, a large user message or inline data would otherwise fail the workflow task over
and over. Temporal's own external-storage hook (``DataConverter.external_storage``) calls this
driver for every payload at or above ``PAYLOAD_THRESHOLD``: the bytes are stored once, keyed by
their SHA-256 (so retries and repeats are one row), and the workflow history holds a ~100-byte
reference. Clients and workers read them back from the same database, so a client that sends or
receives large values needs the sessions database URL too (``adkt.client.connect`` reads it from
``ADK_DATABASE_URL``).

A value above ``MAX_PAYLOAD_BYTES`` is refused where it is made, with an error that says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from adk_core.errors import InvalidInputError
from adk_core.sql.schema import payloads
from adk_temporal.activities.contracts import MAX_PAYLOAD_BYTES

PAYLOAD_THRESHOLD = 256 * 1024
"""Payloads from this size on are stored out of band (Temporal's own default threshold)."""


class PostgresPayloadDriver(StorageDriver):
    """Stores payloads in the ``adk_payloads`` table of the sessions database."""

    def __init__(self, engine: AsyncEngine, *, name: str = "adk-postgres") -> None:
        self._engine = engine
        self._name = name

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return "adk-postgres"

    async def store(self, context: StorageDriverStoreContext, values: Sequence[Payload]) -> list[StorageDriverClaim]:
        rows: list[dict[str, Any]] = []
        for payload in values:
            data = payload.SerializeToString()
            if len(data) > MAX_PAYLOAD_BYTES:
                raise InvalidInputError(
                    f"a value of {len(data) / 2**20:.1f} MiB cannot be sent through a durable run (the limit is "
                    f"{MAX_PAYLOAD_BYTES // 2**20} MiB); store it as an artifact and pass its name instead"
                )
            rows.append({"sha256": hashlib.sha256(data).hexdigest(), "data": data, "size": len(data),
                         "create_time": time.time()})
        # The same bytes stored again (content-addressed: without encryption, another conversation's
        # identical value) are young again: retention (adk_core.sql.retention) keeps payloads younger
        # than its age because the history that references a fresh store may not exist yet.
        statement = insert(payloads)
        statement = statement.on_conflict_do_update(
            index_elements=["sha256"], set_={"create_time": statement.excluded.create_time}
        )
        async with self._engine.begin() as conn:
            # One row per key: DO UPDATE may not touch a row twice (two equal values in one call).
            await conn.execute(statement, list({row["sha256"]: row for row in rows}.values()))
        return [StorageDriverClaim(claim_data={"sha256": row["sha256"]}) for row in rows]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        keys = [claim.claim_data["sha256"] for claim in claims]
        async with self._engine.connect() as conn:
            result = await conn.execute(sa.select(payloads.c.sha256, payloads.c.data).where(payloads.c.sha256.in_(keys)))
            found = {row.sha256: bytes(row.data) for row in result}
        missing = [key for key in keys if key not in found]
        if missing:
            raise LookupError(
                f"stored payload(s) {', '.join(missing)} are not in table adk_payloads; the client and worker must "
                "use the same sessions database (ADK_DATABASE_URL)"
            )
        return [Payload.FromString(found[key]) for key in keys]


def with_payload_storage(converter: DataConverter, driver: StorageDriver | None) -> DataConverter:
    """``converter`` storing large payloads through ``driver`` (unchanged when driver is None)."""
    if driver is None:
        return converter
    storage = ExternalStorage(drivers=[driver], payload_size_threshold=PAYLOAD_THRESHOLD)
    return dataclasses.replace(converter, external_storage=storage)
