"""`adkt retention install` options: ages are read as 45s/30m/12h/90d/never, and what would delete too
early is refused before anything connects."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from adkt.commands.retention import parse_age
from adkt.main import app


@pytest.mark.parametrize(("text", "seconds"), [("45s", 45.0), ("30m", 1800.0), ("12h", 43200.0), ("90d", 7776000.0),
                                               ("10", 10.0), ("1.5h", 5400.0), ("never", None)])  # fmt: skip
def test_ages(text: str, seconds: float | None) -> None:
    assert parse_age(text, "--x") == seconds


def test_a_bad_age_says_how_to_write_one() -> None:
    with pytest.raises(typer.BadParameter, match="45s, 30m, 12h, 90d or never"):
        parse_age("ten days", "--eval-runs")


@pytest.mark.parametrize(("args", "message"), [(["--payloads", "10m"], "at least 1h"), (["--every", "5s"], "at least 1m")])
def test_too_early_is_refused_before_connecting(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["retention", "install", *args, "--address", "127.0.0.1:1"],
                                env={"COLUMNS": "200", "NO_COLOR": "1"})  # fmt: skip
    assert result.exit_code == 2 and message in result.output
