"""Large Temporal payloads stored out of band.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import BYTEA

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adk_payloads",
        sa.Column("sha256", sa.Text, nullable=False),
        sa.Column("data", BYTEA, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="adk_payloads_pkey"),
    )


def downgrade() -> None:
    op.drop_table("adk_payloads")
