"""Evaluation results: suite runs, cases, trials.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_EMPTY_OBJECT = sa.text("'{}'::jsonb")


def upgrade() -> None:
    op.create_table(
        "adk_eval_runs",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("suite", sa.Text, nullable=False),
        sa.Column("mode", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("config", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
        sa.Column("summary", JSONB, nullable=True),
        sa.Column("start_time", sa.Double, nullable=False),
        sa.Column("end_time", sa.Double, nullable=True),
        sa.PrimaryKeyConstraint("run_id", name="adk_eval_runs_pkey"),
    )
    op.create_index("adk_eval_runs_start_time", "adk_eval_runs", ["start_time"])
    op.create_table(
        "adk_eval_cases",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("case_name", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("trials", sa.Integer, nullable=False),
        sa.Column("passed_trials", sa.Integer, nullable=False),
        sa.Column("pass_hat_k", sa.Double, nullable=True),
        sa.Column("duration_ms", sa.Double, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=True),
        sa.Column("output_tokens", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("run_id", "case_name", name="adk_eval_cases_pkey"),
        sa.ForeignKeyConstraint(["run_id"], ["adk_eval_runs.run_id"], name="adk_eval_cases_run_fkey", ondelete="CASCADE"),
    )
    op.create_table(
        "adk_eval_trials",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("case_name", sa.Text, nullable=False),
        sa.Column("trial", sa.Integer, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("metrics", JSONB, nullable=False, server_default=_EMPTY_OBJECT),
        sa.Column("error", JSONB, nullable=True),
        sa.Column("termination_reason", sa.Text, nullable=True),
        sa.Column("turns", sa.Integer, nullable=False),
        sa.Column("duration_ms", sa.Double, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=True),
        sa.Column("output_tokens", sa.BigInteger, nullable=True),
        sa.Column("session_app_name", sa.Text, nullable=True),
        sa.Column("session_user_id", sa.Text, nullable=True),
        sa.Column("session_id", sa.Text, nullable=True),
        sa.Column("record_time", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "case_name", "trial", name="adk_eval_trials_pkey"),
        sa.ForeignKeyConstraint(["run_id"], ["adk_eval_runs.run_id"], name="adk_eval_trials_run_fkey", ondelete="CASCADE"),
    )


def downgrade() -> None:
    op.drop_table("adk_eval_trials")
    op.drop_table("adk_eval_cases")
    op.drop_index("adk_eval_runs_start_time", table_name="adk_eval_runs")
    op.drop_table("adk_eval_runs")
