"""Deleting a session or a user everywhere: their Temporal workflows, then their rows in Postgres
(docs/security.md, "Deleting a session or a user").

    report = await delete_user(client, engine, "shop", "u1")

Order matters. The workflows go first: terminated (so no activity of theirs writes again) and
deleted with their histories. Their histories are read before that, for the large payloads they
reference (``adk_payloads`` keys). Then one transaction (``adk_core.sql.erase``) removes the rows
and those payloads, when they can only be theirs: rows are keyed by the SHA-256 of their bytes, so
without encryption two conversations holding the same large value (a tool that returns the same
document) share one row, and deleting it would break the other's replay. Without an encrypting
codec those payloads are left to retention (``adkt retention``), which removes a row only once no
kept history references it; with ``EncryptionCodec`` each stored value's bytes are unique (a fresh
nonce every time), so they go at once. Each step deletes what is there and skips what is gone, so calling again after
any failure finishes the job.

Which workflows: a session's conversation (``adk-session/app/user/session``), its child workflows
(``.../branch/...``, ids under the conversation's) and its ``run_once`` runs
(``adk-run/app/user/session/...``); a user's, all of those for any session, plus every workflow
carrying the user's AdkApp and AdkUser search attributes (eval runs started with them, children of
other ids). Every run of each id is deleted (continued-as-new runs included).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from adk_core.ids import escape_id_part, validate_id, validate_session_key
from adk_core.sql.erase import erase_session, erase_user
from adk_temporal.encryption import EncryptionCodec
from adk_temporal.workflows.contracts import session_workflow_id

MAX_ROUNDS = 5
"""How many times the workflows are listed and deleted before giving up: a message sent while a
deletion runs can start a conversation again."""
HISTORY_WAIT = 60.0
"""Seconds a deletion waits for Temporal to remove the histories it was told to delete."""
_SHA256 = re.compile(rb'"sha256"\s*:\s*"([0-9a-f]{64})"')
_REFERENCE_MARKER = "__temporal_external_storage_reference"
_REFERENCE_ENCODINGS = (b"json/external-storage-reference", b"json/protobuf")


@dataclass
class DeletionReport:
    """What a deletion removed."""

    workflows: list[str] = field(default_factory=list)
    """The workflow ids deleted (each with all its runs)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows deleted per table."""
    histories_pending: list[str] = field(default_factory=list)
    """Workflows whose deletion Temporal accepted (they are terminated) but whose histories it had
    not removed yet after HISTORY_WAIT: it goes on removing them in the background."""
    payloads_left_to_retention: int = 0
    """Large payloads the deleted histories referenced but that may be shared with other
    conversations (no encryption): retention removes them once nothing references them."""


class DeletionIncompleteError(RuntimeError):
    """Workflows kept reappearing; the message says which. Run the deletion again."""


async def delete_session(
    client: Client, engine: AsyncEngine, app_name: str, user_id: str, session_id: str, *, wait: bool = True
) -> DeletionReport:
    """Delete one session: its workflows (and the large payloads only they reference), then its rows.

    ``wait``: return only once Temporal has removed the histories (it deletes them in the background:
    milliseconds on the embedded dev server, 10-55 s on a stock one; at most HISTORY_WAIT); False returns once Temporal
    has accepted each deletion (the workflows are terminated by then)."""
    validate_session_key(app_name, user_id, session_id)
    conversation = session_workflow_id(app_name, user_id, session_id)
    run_prefix = "adk-run/" + "/".join(map(escape_id_part, (app_name, user_id, session_id))) + "/"
    query = (
        f"WorkflowId = {_quote(conversation)} OR WorkflowId STARTS_WITH {_quote(conversation + '/')}"
        f" OR WorkflowId STARTS_WITH {_quote(run_prefix)}"
    )
    workflows, keys, pending = await _delete_workflows(client, [query], wait)
    own, left = _own_payloads(client, keys)
    rows = await erase_session(engine, app_name, user_id, session_id, payload_keys=own)
    return DeletionReport(workflows=workflows, rows=rows, histories_pending=pending, payloads_left_to_retention=left)


async def delete_user(
    client: Client, engine: AsyncEngine, app_name: str, user_id: str, *, wait: bool = True
) -> DeletionReport:
    """Delete everything of one user of one app: their workflows, payloads, sessions, state, memory,
    artifacts, streamed partials, simulator sessions and eval trials. ``wait``: as delete_session."""
    validate_id("app name", app_name)
    validate_id("user id", user_id)
    parts = "/".join(map(escape_id_part, (app_name, user_id))) + "/"
    by_id = f"WorkflowId STARTS_WITH {_quote('adk-session/' + parts)} OR WorkflowId STARTS_WITH {_quote('adk-run/' + parts)}"
    by_attributes = f"AdkApp = {_quote(app_name)} AND AdkUser = {_quote(user_id)}"
    workflows, keys, pending = await _delete_workflows(client, [by_id, by_attributes], wait)
    own, left = _own_payloads(client, keys)
    rows = await erase_user(engine, app_name, user_id, payload_keys=own)
    return DeletionReport(workflows=workflows, rows=rows, histories_pending=pending, payloads_left_to_retention=left)


def _own_payloads(client: Client, keys: set[str]) -> tuple[set[str], int]:
    """The payload keys a deletion may remove now, and how many it leaves to retention (the module's
    docstring says why): all of them under ``EncryptionCodec``, none without it."""
    if isinstance(client.data_converter.payload_codec, EncryptionCodec):
        return keys, 0
    return set(), len(keys)


async def _delete_workflows(
    client: Client, queries: list[str], wait: bool
) -> tuple[list[str], set[str], list[str]]:
    """Terminate and delete every run the queries list, until a listing finds no run not deleted
    yet; returns the workflow ids deleted, the payload keys their histories referenced and (with
    ``wait``) the workflows whose histories Temporal had not removed yet within HISTORY_WAIT.

    Visibility lists a deleted run for a while after its history is gone (seconds to tens of
    seconds on the dev server), so runs deleted here are not waited for: a later listing that still
    holds them holds nothing new. A run started meanwhile (a message sent to the conversation while
    it is deleted) has a new run id and is deleted in the next round."""
    deleted: list[str] = []
    done: set[tuple[str, str]] = set()
    keys: set[str] = set()
    pending: list[str] = []
    for _ in range(MAX_ROUNDS):
        runs = [(w, r, s) for w, r, s in await _list_runs(client, queries) if (w, r) not in done]
        if not runs:
            return deleted, keys, pending
        # Running ones first, so nothing they start runs on while their histories are read.
        for workflow_id, run_id, status in runs:
            if status == WorkflowExecutionStatus.RUNNING:
                await _ignoring_not_found(client.get_workflow_handle(workflow_id, run_id=run_id).terminate("deleted"))
        for workflow_id, run_id, _ in runs:
            keys |= await history_payload_keys(client, workflow_id, run_id)
            found = await _ignoring_not_found(
                client.workflow_service.delete_workflow_execution(
                    DeleteWorkflowExecutionRequest(
                        namespace=client.namespace,
                        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                    )
                )
            )
            done.add((workflow_id, run_id))
            if found and workflow_id not in deleted:  # not found: deleted before (a retry), listed late
                deleted.append(workflow_id)
        if wait:
            pending += [w for w in await _histories_left(client, [(w, r) for w, r, _ in runs]) if w not in pending]
    raise DeletionIncompleteError(
        f"workflows of {queries[0]!r} were still being started after {MAX_ROUNDS} rounds of deleting (a client "
        "keeps sending to them?); stop the senders and run the deletion again"
    )


async def _histories_left(client: Client, runs: list[tuple[str, str]]) -> list[str]:
    """Wait until Temporal has removed the runs' histories (it accepts a deletion at once and removes
    the history in the background: seconds, tens of seconds on a busy dev server), for at most
    HISTORY_WAIT; returns the workflow ids whose histories are still there by then. Those are
    terminated and their deletion accepted, so the rows are erased all the same: failing here would
    only leave the rows behind while Temporal finishes the job."""
    deadline = time.monotonic() + HISTORY_WAIT
    left: list[str] = []
    for workflow_id, run_id in runs:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        while True:
            try:
                await handle.describe()
            except RPCError as e:
                if e.status == RPCStatusCode.NOT_FOUND:
                    break
                raise
            if time.monotonic() > deadline:
                left.append(workflow_id)
                break
            await asyncio.sleep(0.2)
    return left


async def _list_runs(client: Client, queries: list[str]) -> list[tuple[str, str, WorkflowExecutionStatus | None]]:
    found: dict[tuple[str, str], WorkflowExecutionStatus | None] = {}
    for query in queries:
        try:
            async for execution in client.list_workflows(query):
                found[(execution.id, execution.run_id)] = execution.status
        except RPCError as e:
            # A namespace without the AdkApp/AdkUser attributes cannot be asked by them: nothing
            # was started with them, so the id queries find everything there is.
            if e.status == RPCStatusCode.INVALID_ARGUMENT and "Adk" in query:
                continue
            raise
    return [(w, r, s) for (w, r), s in found.items()]


async def history_payload_keys(client: Client, workflow_id: str, run_id: str | None = None) -> set[str]:
    """The ``adk_payloads`` keys the run's history references (Temporal external-storage references,
    decoded with the client's codec when they are encrypted)."""
    try:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return set()
        raise
    codec = client.data_converter.payload_codec
    keys: set[str] = set()
    for event in history.events:
        for payload in _payloads(event):
            if _REFERENCE_MARKER not in payload.metadata and payload.metadata.get("encoding") not in _REFERENCE_ENCODINGS:
                continue
            if codec is not None:
                payload = (await codec.decode([payload]))[0]
            keys.update(m.decode() for m in _SHA256.findall(payload.data))
    return keys


def _payloads(message: Message) -> Iterator[Payload]:
    """Every Payload inside a protobuf message (fields, lists and maps, at any depth)."""
    if isinstance(message, Payload):
        yield message
        return
    for descriptor, value in message.ListFields():
        if descriptor.type != descriptor.TYPE_MESSAGE:
            continue
        if isinstance(value, Message):
            yield from _payloads(value)
            continue
        # A repeated field, or a map (its values): either way a container of messages or scalars.
        for item in value.values() if hasattr(value, "values") else value:
            if isinstance(item, Message):
                yield from _payloads(item)


async def _ignoring_not_found(call: object) -> bool:
    """Await ``call``; False when Temporal answered NOT_FOUND (gone already: what a retry meets)."""
    try:
        await call  # type: ignore[misc]
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        return False
    return True


def _quote(value: str) -> str:
    """A string literal of Temporal's list filter."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
