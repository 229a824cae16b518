"""The Postgres tables of the session, memory and artifact stores.

The migrations in ``migrations/versions`` create exactly these tables (a test compares them);
services build their queries from these objects. Times are epoch seconds (``double precision``),
the same floats events carry, so values round-trip exactly.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import BYTEA, JSONB, TSVECTOR

metadata = sa.MetaData()

_EMPTY_OBJECT = sa.text("'{}'::jsonb")

sessions = sa.Table(
    "adk_sessions",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.Column("create_time", sa.Double, nullable=False),
    sa.Column("update_time", sa.Double, nullable=False),
    # The seq of the last event appended; the next event gets last_seq + 1 under the row lock.
    sa.Column("last_seq", sa.BigInteger, nullable=False, server_default=sa.text("0")),
    # Whether every compaction event of the session has its range in adk_events.covers_from/to:
    # false for a session holding events sealed before migration 0008 recorded ranges (a sealed
    # event's range cannot be read to fill them). Its reads skipping compacted events read all.
    sa.Column("compaction_ranges_complete", sa.Boolean, nullable=False, server_default=sa.true()),
)

events = sa.Table(
    "adk_events",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
    sa.Column("session_id", sa.Text, primary_key=True),
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("invocation_id", sa.Text, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("branch", sa.Text, nullable=True),
    sa.Column("timestamp", sa.Double, nullable=False),
    sa.Column("event", JSONB, nullable=False),
    # A compaction event's timestamp range (EventCompaction.start_timestamp, end_timestamp), in
    # clear like the timestamp (the event itself may be sealed); NULL for every other event. What
    # a long compacted session's reads leave out is chosen by these (GetSessionConfig.skip_compacted).
    sa.Column("covers_from", sa.Double, nullable=True),
    sa.Column("covers_to", sa.Double, nullable=True),
    sa.ForeignKeyConstraint(
        ["app_name", "user_id", "session_id"],
        ["adk_sessions.app_name", "adk_sessions.user_id", "adk_sessions.id"],
        name="adk_events_session_fkey",
        ondelete="CASCADE",
    ),
    sa.Index("adk_events_session_seq", "app_name", "user_id", "session_id", "seq", unique=True),
    sa.Index("adk_events_invocation_id", "invocation_id"),
    # Partial, though nearly every event is in it: only a query saying "covers_from IS NULL" can use
    # it. On a table not analyzed yet, the planner took it for every query of a session (the
    # primary key lookups of _statements._seq_of included), reading the whole session each time.
    sa.Index(
        "adk_events_session_timestamp",
        "app_name", "user_id", "session_id", "timestamp",
        postgresql_where=sa.text("covers_from IS NULL"),
    ),
    sa.Index(
        "adk_events_session_compactions",
        "app_name", "user_id", "session_id", "seq",
        postgresql_where=sa.text("covers_from IS NOT NULL"),
        postgresql_include=["covers_from", "covers_to"],
    ),
    # Where each compaction's range starts and ends (migration 0009): a skipping read finds the
    # compactions the newest one does not hold without reading the others.
    sa.Index(
        "adk_events_compaction_starts",
        "app_name", "user_id", "session_id", "covers_from",
        postgresql_where=sa.text("covers_from IS NOT NULL"),
    ),
    sa.Index(
        "adk_events_compaction_ends",
        "app_name", "user_id", "session_id", "covers_to",
        postgresql_where=sa.text("covers_from IS NOT NULL"),
    ),
)

app_states = sa.Table(
    "adk_app_states",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.Column("update_time", sa.Double, nullable=False),
)

user_states = sa.Table(
    "adk_user_states",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
    sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.Column("update_time", sa.Double, nullable=False),
)

TEXT_SEARCH_CONFIG = "english"
"""Fixed in the generated tsvector column, so queries must use the same configuration."""

memory_entries = sa.Table(
    "adk_memory_entries",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
    sa.Column("event_id", sa.Text, primary_key=True),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("author", sa.Text, nullable=True),
    sa.Column("timestamp", sa.Double, nullable=True),
    sa.Column("content", JSONB, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column(
        "tsv",
        TSVECTOR,
        sa.Computed(f"to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, text)", persisted=True),
        nullable=True,
    ),
    sa.Index("adk_memory_entries_tsv", "tsv", postgresql_using="gin"),
)

artifacts = sa.Table(
    "adk_artifacts",
    metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
    # The session id, or 'user' for user:-scoped names (see adk_core.artifacts.base.scope_session_id).
    sa.Column("session_id", sa.Text, primary_key=True),
    sa.Column("filename", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("mime_type", sa.Text, nullable=True),
    sa.Column("data", BYTEA, nullable=True),
    sa.Column("text", sa.Text, nullable=True),
    sa.Column("file_uri", sa.Text, nullable=True),
    # The rest of the Part as JSON (display names, flags), without the bytes and text above.
    sa.Column("part", JSONB, nullable=False),
    sa.Column("create_time", sa.Double, nullable=False),
    # The id a durable run gave the save (ArtifactService.save_artifact), in clear: a retried save
    # activity finds the version its first attempt stored instead of storing another. NULL for
    # in-process saves and versions stored before migration 0010.
    sa.Column("save_id", sa.Text, nullable=True),
    sa.Index(
        "adk_artifacts_save_id",
        "app_name", "user_id", "session_id", "filename", "save_id",
        unique=True,
        postgresql_where=sa.text("save_id IS NOT NULL"),
    ),
)

payloads = sa.Table(
    "adk_payloads",
    metadata,
    # Temporal payloads too large to travel inline (workflows.payload_storage), by content hash:
    # storing the same bytes twice is one row, so retried writes are harmless.
    sa.Column("sha256", sa.Text, primary_key=True),
    sa.Column("data", BYTEA, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("create_time", sa.Double, nullable=False),
)

# --- evaluation results (adk_core.eval.store) ------------------------------------------------------
# A suite run, its cases (trials combined, written when the run ends) and every trial (written as
# each ends, by EvalCaseWorkflow's activity or the in-process CLI). Traces are not copied here:
# a trial names the session that holds its events.

eval_runs = sa.Table(
    "adk_eval_runs",
    metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("suite", sa.Text, nullable=False),
    sa.Column("mode", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("config", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.Column("summary", JSONB, nullable=True),
    sa.Column("start_time", sa.Double, nullable=False),
    sa.Column("end_time", sa.Double, nullable=True),
    sa.Index("adk_eval_runs_start_time", "start_time"),
)

eval_cases = sa.Table(
    "adk_eval_cases",
    metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("case_name", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("trials", sa.Integer, nullable=False),
    sa.Column("passed_trials", sa.Integer, nullable=False),
    sa.Column("pass_hat_k", sa.Double, nullable=True),
    sa.Column("duration_ms", sa.Double, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=True),
    sa.Column("output_tokens", sa.BigInteger, nullable=True),
    sa.ForeignKeyConstraint(["run_id"], ["adk_eval_runs.run_id"], name="adk_eval_cases_run_fkey", ondelete="CASCADE"),
)

eval_trials = sa.Table(
    "adk_eval_trials",
    metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("case_name", sa.Text, primary_key=True),
    sa.Column("trial", sa.Integer, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("metrics", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.Column("error", JSONB, nullable=True),
    sa.Column("termination_reason", sa.Text, nullable=True),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("duration_ms", sa.Double, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=True),
    sa.Column("output_tokens", sa.BigInteger, nullable=True),
    # Where the trace lives: the trial's main session in adk_sessions / adk_events.
    sa.Column("session_app_name", sa.Text, nullable=True),
    sa.Column("session_user_id", sa.Text, nullable=True),
    sa.Column("session_id", sa.Text, nullable=True),
    sa.Column("record_time", sa.Double, nullable=False),
    # What the trial's streaming metrics measured (adk_core.eval.streaming), by name (migration 0007).
    sa.Column("measurements", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
    sa.ForeignKeyConstraint(["run_id"], ["adk_eval_runs.run_id"], name="adk_eval_trials_run_fkey", ondelete="CASCADE"),
)

# --- agent simulator (adk_core.simulator.sql) -------------------------------------------------------
# The seed's promoted-field pattern: the full entity as JSONB, plus the columns queries filter,
# join and order on. One simulator session per ADK session the plugin serves (unique key below).

simulator_sessions = sa.Table(
    "adk_simulator_sessions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default=sa.text("'active'")),
    sa.Column("app_name", sa.Text, nullable=True),
    sa.Column("user_id", sa.Text, nullable=True),
    sa.Column("adk_session_id", sa.Text, nullable=True),
    sa.Column("session", JSONB, nullable=False),
    sa.UniqueConstraint("app_name", "user_id", "adk_session_id", name="adk_simulator_sessions_adk_key"),
    sa.Index("adk_simulator_sessions_status_created", "status", "created_at"),
)

simulator_events = sa.Table(
    "adk_simulator_events",
    metadata,
    sa.Column("event_id", sa.Text, primary_key=True),
    sa.Column("session_id", sa.Text, nullable=False),
    # Arrival order, for events with the same timestamp (parallel agents in one workflow task).
    sa.Column("seq", sa.BigInteger, sa.Identity(), nullable=False),
    sa.Column("timestamp", sa.Double, nullable=False),
    sa.Column("turn_id", sa.Text, nullable=False),
    sa.Column("agent_name", sa.Text, nullable=False),
    sa.Column("payload_type", sa.Text, nullable=False),
    sa.Column("event", JSONB, nullable=False),
    sa.ForeignKeyConstraint(
        ["session_id"], ["adk_simulator_sessions.id"], name="adk_simulator_events_session_fkey", ondelete="CASCADE"
    ),
    # One request and at most one response per turn, whatever writes them.
    sa.UniqueConstraint("turn_id", "payload_type", name="adk_simulator_events_turn_payload"),
    sa.Index("adk_simulator_events_session_time", "session_id", "timestamp", "seq"),
    sa.Index("adk_simulator_events_turn", "turn_id"),
)

# --- streamed model output (activities.streaming, adkt._stream_follow) -----------------------------
# Partial responses of a durable model call on their way from the model activity to the clients that
# follow the turn (a NOTIFY on the stream's channel says when to read). Never in workflow history;
# a finished turn's rows are deleted by its client, and anything older than the retention by workers.

stream_chunks = sa.Table(
    "adk_stream_chunks",
    metadata,
    # Commit order within a stream: writers of one stream take turns on an advisory lock.
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("call", sa.Integer, nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    # How many events the turn had made when this model call started: where its partials go.
    sa.Column("after_events", sa.Integer, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("event", JSONB, nullable=False),
    sa.Column("create_time", sa.Double, nullable=False),
    sa.UniqueConstraint("stream_id", "call", "attempt", "seq", name="adk_stream_chunks_position"),
    sa.Index("adk_stream_chunks_stream", "stream_id", "id"),
    sa.Index("adk_stream_chunks_create_time", "create_time"),
)
