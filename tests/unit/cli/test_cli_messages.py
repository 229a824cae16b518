"""What the commands print: one line per error, reply commands, the migration report."""

from __future__ import annotations

import asyncio

import pytest
import typer

from adk_core.errors import ConfigurationError
from adk_temporal.workflows import PendingRequest
from adkt.commands._apps import parse_app_spec
from adkt.commands._common import error_line, run_async
from adkt.commands._conversation import reply_commands, response_for
from adkt.commands.serve import _migration_report

CONFIRM = PendingRequest(kind="tool_confirmation", call_id="c-1", name="send_money", args={"amount": 50})
LONG = PendingRequest(kind="long_running_tool", call_id="c-2", name="ask_manager", args={})


async def _fail(error: BaseException) -> None:
    raise error


def test_an_error_is_one_line_and_keeps_brackets(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("ADK_DEBUG", raising=False)
    with pytest.raises(typer.Exit) as exit_info:
        run_async(_fail(ConfigurationError("install it: pip install 'adk-temporal[dev]'")))
    assert exit_info.value.exit_code == 1
    assert capsys.readouterr().err == "error: install it: pip install 'adk-temporal[dev]'\n"


def test_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_DEBUG", "1")
    with pytest.raises(ConfigurationError):
        run_async(_fail(ConfigurationError("x")))


def test_unexpected_errors_point_at_debug_and_connection_errors_say_what_to_check() -> None:
    assert "rerun with --debug" in error_line(KeyError("k"))
    line = error_line(RuntimeError("Failed client connect: connection refused"))
    assert line.startswith("error: cannot connect to Temporal") and "adkt dev" in line


def test_ctrl_c_exits_130() -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as exit_info:
        run_async(interrupted())
    assert exit_info.value.exit_code == 130
    asyncio.set_event_loop(None)


def test_reply_commands_are_exact() -> None:
    spec = parse_app_spec("tests.integration.chat_app:app")
    assert reply_commands(CONFIRM, spec, "ann", "s 1") == (
        "  approve: adkt reply tests.integration.chat_app:app ann 's 1' c-1 --approve\n"
        "  reject:  adkt reply tests.integration.chat_app:app ann 's 1' c-1 --reject"
    )
    assert "--answer '{\"result\": ...}'" in reply_commands(LONG, spec, "ann", "s1")


def test_response_for_checks_the_kind_of_request() -> None:
    assert response_for(CONFIRM, approve=True) == {"confirmed": True}
    assert response_for(CONFIRM, reject=True) == {"confirmed": False}
    assert response_for(LONG, answer='{"status": "ok"}') == {"status": "ok"}
    assert response_for(LONG, answer="3") == {"result": 3}
    with pytest.raises(ConfigurationError.__mro__[1], match="reply --approve or --reject"):
        response_for(CONFIRM, answer="{}")
    with pytest.raises(ValueError, match="--answer JSON"):
        response_for(LONG, approve=True)
    with pytest.raises(ValueError, match="not JSON"):
        response_for(LONG, answer="{nope")
    with pytest.raises(ValueError, match="exactly one"):
        response_for(CONFIRM, approve=True, reject=True)


def test_migration_report_says_what_changed() -> None:
    assert _migration_report((None, set()), ("0006", {"adk_sessions", "adk_events"})) == (
        "database created at schema revision 0006: created adk_events, adk_sessions"
    )
    assert _migration_report(("0004", {"a"}), ("0006", {"a", "b"})) == (
        "database upgraded from schema revision 0004 to 0006: created b"
    )
    assert "nothing to do" in _migration_report(("0006", {"a"}), ("0006", {"a"}))
