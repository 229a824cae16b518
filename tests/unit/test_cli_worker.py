"""`adkt worker` options that need no servers."""

from __future__ import annotations

from typer.testing import CliRunner

from adkt.main import app


def test_worker_needs_an_app_or_eval_cases() -> None:
    result = CliRunner().invoke(app, ["worker"])
    assert result.exit_code == 2
    assert "--app" in result.output and "--eval" in result.output


def test_worker_takes_eval_cases() -> None:
    result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--eval" in result.output
