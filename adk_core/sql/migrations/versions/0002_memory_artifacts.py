"""Memory entries (full-text searchable) and versioned artifacts.

Revision ID: 0002
Revises: 0001
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import BYTEA, JSONB, TSVECTOR

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adk_memory_entries",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("event_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("author", sa.Text, nullable=True),
        sa.Column("timestamp", sa.Double, nullable=True),
        sa.Column("content", JSONB, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("tsv", TSVECTOR, sa.Computed("to_tsvector('english'::regconfig, text)", persisted=True)),
        sa.PrimaryKeyConstraint("app_name", "user_id", "event_id", name="adk_memory_entries_pkey"),
    )
    op.create_index("adk_memory_entries_tsv", "adk_memory_entries", ["tsv"], postgresql_using="gin")
    op.create_table(
        "adk_artifacts",
        sa.Column("app_name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("filename", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("mime_type", sa.Text, nullable=True),
        sa.Column("data", BYTEA, nullable=True),
        sa.Column("text", sa.Text, nullable=True),
        sa.Column("file_uri", sa.Text, nullable=True),
        sa.Column("part", JSONB, nullable=False),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "session_id", "filename", "version", name="adk_artifacts_pkey"
        ),
    )


def downgrade() -> None:
    op.drop_table("adk_artifacts")
    op.drop_index("adk_memory_entries_tsv", table_name="adk_memory_entries")
    op.drop_table("adk_memory_entries")
