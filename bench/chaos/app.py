"""The app the chaos bench runs in worker processes it SIGKILLs.

One turn: the user says "deposit N"; the model calls ``deposit(amount=N)``, then answers
"deposited N, balance B". The model is a ScriptedModel driven by a function of the request, so a
retried model call on another process answers the same. Every timeout is the default one: the bench
measures what a production app with no tuning gets.

``deposit`` is the example idempotent tool. Its effect (adding to the session's balance) is applied
once per idempotency key, the invocation id + function call id of the call, which stay the same when
Temporal retries the activity on another worker after a crash. It also counts what a naive tool would
have done: every execution is logged in ``chaos_executions`` before the effect, so
raw executions - distinct keys = the effects dedupe prevented.

Configuration comes from the bench through the worker's environment (these modules are the worker's
app, not library code): CHAOS_DATABASE_URL, CHAOS_TOOL_SECONDS (time spent in the tool before its
effect: a window for kills to land mid-tool) and CHAOS_TRACE_DIR (each process appends what its
activities start to ``attempts-<pid>.jsonl`` there, to tell which work a killed worker held).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.models import function_call_response, text_response
from adk_core.sql import open_engine

APP_NAME = "chaos"

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS chaos_executions (
        id bigserial PRIMARY KEY, key text NOT NULL, account text NOT NULL, amount int NOT NULL,
        pid int NOT NULL, at double precision NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS chaos_effects (
        key text PRIMARY KEY, account text NOT NULL, amount int NOT NULL, balance bigint NOT NULL,
        pid int NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS chaos_accounts (
        account text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, naive_balance bigint NOT NULL DEFAULT 0)""",
)

_engine: AsyncEngine | None = None


def _db() -> AsyncEngine:
    global _engine
    if _engine is None:
        _engine = open_engine(os.environ["CHAOS_DATABASE_URL"], pool_size=5)
    return _engine


def idempotency_key(tool_context: ToolContext) -> str:
    """The call's idempotency key: ``tool_context.idempotency_key`` once adk_core has it, else the
    same thing built here (invocation id + function call id: both are fixed by the workflow, so every
    attempt of one call, on any worker, gets the same key)."""
    key = getattr(tool_context, "idempotency_key", None)
    return key or f"{tool_context.invocation_id}/{tool_context.function_call_id}"


def _trace_attempt(kind: str) -> None:
    """One line per activity attempt that reaches app code: which process held which activity."""
    folder = os.environ.get("CHAOS_TRACE_DIR")
    if not folder or not activity.in_activity():
        return
    info = activity.info()
    line = json.dumps(
        {"kind": kind, "workflow_id": info.workflow_id, "run_id": info.workflow_run_id,
         "activity_id": info.activity_id, "attempt": info.attempt, "pid": os.getpid(), "at": time.time()}
    )  # fmt: skip
    # One unbuffered append per line: a SIGKILL loses nothing already written.
    fd = os.open(os.path.join(folder, f"attempts-{os.getpid()}.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


async def deposit(amount: int, tool_context: ToolContext) -> dict:
    """Deposit an amount into this conversation's account.

    Args:
        amount: how much to deposit.
    """
    _trace_attempt("tool")
    key = idempotency_key(tool_context)
    account = f"{tool_context.user_id}/{tool_context.session_id}"
    async with _db().begin() as conn:
        await conn.execute(
            text("INSERT INTO chaos_executions (key, account, amount, pid, at) VALUES (:k, :a, :n, :p, :t)"),
            dict(k=key, a=account, n=amount, p=os.getpid(), t=time.time()),
        )
        await conn.execute(
            text("INSERT INTO chaos_accounts (account, naive_balance) VALUES (:a, :n) "
                 "ON CONFLICT (account) DO UPDATE SET naive_balance = chaos_accounts.naive_balance + :n"),
            dict(a=account, n=amount),
        )  # fmt: skip
    await asyncio.sleep(float(os.environ.get("CHAOS_TOOL_SECONDS", "0.2")))
    async with _db().begin() as conn:
        claimed = await conn.execute(
            text("INSERT INTO chaos_effects (key, account, amount, balance, pid) VALUES (:k, :a, :n, 0, :p) "
                 "ON CONFLICT (key) DO NOTHING RETURNING key"),
            dict(k=key, a=account, n=amount, p=os.getpid()),
        )  # fmt: skip
        if claimed.first() is not None:
            balance = (
                await conn.execute(
                    text("UPDATE chaos_accounts SET balance = balance + :n WHERE account = :a RETURNING balance"),
                    dict(a=account, n=amount),
                )
            ).scalar_one()
            await conn.execute(text("UPDATE chaos_effects SET balance = :b WHERE key = :k"), dict(b=balance, k=key))
        else:  # applied by an earlier attempt: answer as it did
            balance = (
                await conn.execute(text("SELECT balance FROM chaos_effects WHERE key = :k"), dict(k=key))
            ).scalar_one()
    return {"amount": amount, "balance": balance}


def _turn(request: LlmRequest) -> tuple[str, list[dict[str, Any]]]:
    """The user's text of this turn and the tool responses since."""
    responses: list[dict[str, Any]] = []
    for content in reversed(request.contents):
        if content.role == "user" and any(p.text for p in content.parts):
            return "".join(p.text or "" for p in content.parts), responses
        responses[:0] = [p.function_response.response for p in content.parts if p.function_response]
    return "", responses


def script(request: LlmRequest) -> Any:
    _trace_attempt("model")
    message, responses = _turn(request)
    if not responses:
        match = re.fullmatch(r"deposit (\d+)", message.strip())
        if match is None:
            return text_response(f"say 'deposit N', not {message!r}")
        return function_call_response("deposit", {"amount": int(match.group(1))})
    last = responses[-1]
    return text_response(f"deposited {last['amount']}, balance {last['balance']}")


app = App(
    name=APP_NAME,
    root_agent=LlmAgent(
        name="teller",
        model=ScriptedModel(script, name="chaos-scripted"),
        instruction="Deposit what the user asks with the deposit tool, then report the balance.",
        tools=[deposit],
    ),
)
