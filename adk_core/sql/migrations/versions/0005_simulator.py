"""Agent simulator: sessions and their request/response events.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adk_simulator_sessions",
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("status", sa.Text, nullable=False, server_default=sa.text("'active'")),
        sa.Column("app_name", sa.Text, nullable=True),
        sa.Column("user_id", sa.Text, nullable=True),
        sa.Column("adk_session_id", sa.Text, nullable=True),
        sa.Column("session", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("id", name="adk_simulator_sessions_pkey"),
        sa.UniqueConstraint("app_name", "user_id", "adk_session_id", name="adk_simulator_sessions_adk_key"),
    )
    op.create_index("adk_simulator_sessions_status_created", "adk_simulator_sessions", ["status", "created_at"])
    op.create_table(
        "adk_simulator_events",
        sa.Column("event_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("timestamp", sa.Double, nullable=False),
        sa.Column("turn_id", sa.Text, nullable=False),
        sa.Column("agent_name", sa.Text, nullable=False),
        sa.Column("payload_type", sa.Text, nullable=False),
        sa.Column("event", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("event_id", name="adk_simulator_events_pkey"),
        sa.ForeignKeyConstraint(
            ["session_id"], ["adk_simulator_sessions.id"], name="adk_simulator_events_session_fkey", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("turn_id", "payload_type", name="adk_simulator_events_turn_payload"),
    )
    op.create_index("adk_simulator_events_session_time", "adk_simulator_events", ["session_id", "timestamp", "seq"])
    op.create_index("adk_simulator_events_turn", "adk_simulator_events", ["turn_id"])


def downgrade() -> None:
    op.drop_table("adk_simulator_events")
    op.drop_table("adk_simulator_sessions")
