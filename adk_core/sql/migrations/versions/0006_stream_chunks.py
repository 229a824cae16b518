"""Streamed model output: partial responses on their way from the model activity to clients.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adk_stream_chunks",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("stream_id", sa.Text, nullable=False),
        sa.Column("call", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("after_events", sa.Integer, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("event", JSONB, nullable=False),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("id", name="adk_stream_chunks_pkey"),
        sa.UniqueConstraint("stream_id", "call", "attempt", "seq", name="adk_stream_chunks_position"),
    )
    op.create_index("adk_stream_chunks_stream", "adk_stream_chunks", ["stream_id", "id"])
    op.create_index("adk_stream_chunks_create_time", "adk_stream_chunks", ["create_time"])


def downgrade() -> None:
    op.drop_table("adk_stream_chunks")
