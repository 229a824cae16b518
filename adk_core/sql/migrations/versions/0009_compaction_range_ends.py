"""An index on each end of the compaction ranges, so a cold read does not grow with the compactions.

A read skipping compacted events (GetSessionConfig.skip_compacted) keeps the compactions whose
range the newest one does not hold. It found them by reading every compaction of the session
before the newest one (about 0.6 ms per 1,000 compactions), though the planner's nested ranges
leave none: the token trigger compacts before model calls too, so long agentic sessions gather
thousands. Two partial indexes, on where a compaction's range starts and where it ends, find those
that start before the newest's or end after it without reading the others.

Both hold compaction events only (covers_from is set on nothing else): small, and built in the one
transaction migrations run in.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name, column in (("adk_events_compaction_starts", "covers_from"), ("adk_events_compaction_ends", "covers_to")):
        op.create_index(
            name, "adk_events", ["app_name", "user_id", "session_id", column],
            postgresql_where=sa.text("covers_from IS NOT NULL"),
        )


def downgrade() -> None:
    op.drop_index("adk_events_compaction_ends", table_name="adk_events")
    op.drop_index("adk_events_compaction_starts", table_name="adk_events")
