"""Sessions, events, app and user state.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_EMPTY_OBJECT = sa.text("'{}'::jsonb")


def upgrade() -> None:
    op.create_table(
        "adk_sessions",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.Column("update_time", sa.Double, nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("app_name", "user_id", "id", name="adk_sessions_pkey"),
    )
    op.create_table(
        "adk_events",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("invocation_id", sa.Text, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("branch", sa.Text, nullable=True),
        sa.Column("timestamp", sa.Double, nullable=False),
        sa.Column("event", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "id", name="adk_events_pkey"),
        sa.ForeignKeyConstraint(
            ["app_name", "user_id", "session_id"],
            ["adk_sessions.app_name", "adk_sessions.user_id", "adk_sessions.id"],
            name="adk_events_session_fkey",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "adk_events_session_seq", "adk_events", ["app_name", "user_id", "session_id", "seq"], unique=True
    )
    op.create_index("adk_events_invocation_id", "adk_events", ["invocation_id"])
    op.create_table(
        "adk_app_states",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
        sa.Column("update_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("app_name", name="adk_app_states_pkey"),
    )
    op.create_table(
        "adk_user_states",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("state", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
        sa.Column("update_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", name="adk_user_states_pkey"),
    )


def downgrade() -> None:
    op.drop_table("adk_user_states")
    op.drop_table("adk_app_states")
    op.drop_table("adk_events")
    op.drop_table("adk_sessions")
