"""A newcomer's first hour with `adkt` (issue #10): each test drives the real command as a subprocess,
the way a user types it, and checks what they see.

Commands without a configured Temporal start their own embedded stack (Temporal in memory, Postgres
under the test's `.adk/`); the "remote" cases point TEMPORAL_ADDRESS at the test session's server.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from adk_temporal.workflows import session_workflow_id
from adkt.commands._devstate import DevState
from adkt.embedded import TemporalDevServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

SLOW_APP = '''
import asyncio
from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.errors import ModelError
from adk_core.models import function_call_response, text_response


async def wait_a_while(seconds: int) -> dict:
    """Sleeps."""
    open("tool-started", "w").close()  # in the command's folder: tells the test the turn is under way
    await asyncio.sleep(seconds)
    return {"slept": seconds}


def script(request: LlmRequest):
    text = request.contents[-1].text if request.contents else ""
    if any(p.function_response for c in request.contents[-1:] for p in c.parts):
        return text_response("done waiting")
    if text == "boom":
        raise ModelError("the provider refused: no API key (set GOOGLE_API_KEY)", status=401)
    if text == "slow":
        return function_call_response("wait_a_while", {"seconds": 60})
    return text_response(f"you said {text}")


root_agent = LlmAgent(name="sleeper", model=ScriptedModel(script), tools=[FunctionTool(wait_a_while)])
'''


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder outside /tmp/pytest-of-<user>: as root, the embedded Postgres runs as another account
    that needs the search bit on every ancestor, and a pytest session starting meanwhile (another
    run on this machine) puts pytest's own folder back to 0700."""
    folder = Path(tempfile.mkdtemp(prefix="adkt-newcomer-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def env_for(cwd: Path, **extra: str) -> dict[str, str]:
    # A clean environment: no configured Temporal or database, HOME and .adk inside the test's folder.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    return env | {"HOME": str(cwd), "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"} | extra


def adkt(*args: str, cwd: Path, timeout: float = 120, stdin: str | None = None,
         **extra: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "adkt.main", *args], cwd=cwd, env=env_for(cwd, **extra), capture_output=True,
        text=True, timeout=timeout, input=stdin,
    )  # fmt: skip


def adkt_background(*args: str, cwd: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "adkt.main", *args], cwd=cwd, env=env_for(cwd, **extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what: str, timeout: float = 90) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def no_server_left(folder: Path) -> bool:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return str(folder) not in ps


def copy_examples(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    for name in ("__init__.py", "support_desk.py"):
        (tmp_path / "examples" / name).write_text((EXAMPLES / name).read_text())


# --- item 2: an app by its file; no worker for it -----------------------------------------------------


def test_run_takes_a_file_path_and_finds_app(tmp_path: Path) -> None:
    copy_examples(tmp_path)
    result = adkt("run", "examples/support_desk.py", "Where is invoice INV-42?", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "lookup_invoice" in result.stdout and "TRK-9001" in result.stdout
    assert "app support_desk" in result.stderr


def test_a_file_with_neither_app_nor_root_agent_says_what_to_write(tmp_path: Path) -> None:
    (tmp_path / "empty_app.py").write_text("x = 1\n")
    result = adkt("run", "empty_app.py", "hi", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: 'empty_app.py' defines neither `app` nor `root_agent`; name the one to run, e.g. empty_app.py:my_agent"
    ]


async def test_no_worker_for_the_app_is_one_line_and_starts_no_workflow(
    tmp_path: Path, temporal_server: TemporalDevServer, temporal_client: Client
) -> None:
    copy_examples(tmp_path)
    result = adkt("run", "examples/support_desk.py", "hi", "--session", "s-unserved", cwd=tmp_path,
                  TEMPORAL_ADDRESS=temporal_server.address)  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no worker serves app 'support_desk'" in lines[0]
    assert "adkt worker --app examples/support_desk.py" in lines[0]
    with pytest.raises(RPCError):  # nothing was started that no one would run
        await temporal_client.get_workflow_handle(session_workflow_id("support_desk", "user", "s-unserved")).describe()


# --- item 4: ADK_MODEL beside a running `adkt dev` -------------------------------------------------------


def test_adk_model_beside_a_running_dev_is_noted(tmp_path: Path, temporal_server: TemporalDevServer) -> None:
    copy_examples(tmp_path)
    # What a running `adkt dev` leaves for other commands; this test process stands in for its pid.
    DevState(address=temporal_server.address, database_url="postgresql+psycopg://unused/db", task_queue=None,
             apps=["examples.support_desk:app"], pid=os.getpid()).write(tmp_path / ".adk")  # fmt: skip
    result = adkt("run", "examples/support_desk.py", "hi", cwd=tmp_path, ADK_MODEL="claude-sonnet-4-5")
    assert "note: ADK_MODEL=claude-sonnet-4-5 is not used here: the running `adkt dev`" in result.stderr
    assert "restart it with ADK_MODEL=claude-sonnet-4-5" in result.stderr


# --- item 5: errors, Ctrl-C, chat after a failed turn ----------------------------------------------------


def test_a_failed_turn_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "sleeper.py").write_text(SLOW_APP)
    result = adkt("run", "sleeper.py", "boom", cwd=tmp_path)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no API key (set GOOGLE_API_KEY)" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr

    debug = adkt("--debug", "run", "sleeper.py", "boom", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_chat_goes_on_after_a_failed_turn(tmp_path: Path) -> None:
    (tmp_path / "sleeper.py").write_text(SLOW_APP)
    result = adkt("chat", "sleeper.py", cwd=tmp_path, stdin="boom\nhello\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "no API key" in result.stderr and "the conversation goes on" in result.stderr
    assert "sleeper: you said hello" in result.stdout
    assert "Traceback" not in result.stderr


def test_ctrl_c_during_run_says_where_the_run_is(tmp_path: Path) -> None:
    (tmp_path / "sleeper.py").write_text(SLOW_APP)
    proc = adkt_background("run", "sleeper.py", "slow", "--session", "s-slow", cwd=tmp_path)
    # The embedded stack takes seconds to start (tens on a busy machine): interrupt once the tool runs.
    wait_for(lambda: (tmp_path / "tool-started").exists() or proc.poll() is not None, "the tool to start", 180)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "stopped: this command's embedded Temporal stops with it" in stderr
    assert "adkt sessions show sleeper user s-slow" in stderr
    assert "interrupted: stopping the embedded Temporal, Postgres and worker" in stderr
    assert len(stderr.strip().splitlines()) <= 8, stderr
    assert no_server_left(tmp_path)


# --- item 7: confirmations outside chat ---------------------------------------------------------------------

CONFIRM_APP = "tests.integration.chat_app:app"


def test_run_ends_with_the_reply_command_and_reply_answers_it(tmp_path: Path) -> None:
    first = adkt("run", CONFIRM_APP, "send 50", "--session", "s-confirm", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "? banker wants to run send_money" in first.stderr
    command = f"adkt reply {CONFIRM_APP} user s-confirm"
    assert command in first.stderr and "--approve" in first.stderr

    listed = adkt("pending", CONFIRM_APP, "user", "s-confirm", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    call_id = listed.stderr.split(command + " ")[1].split()[0]

    again = adkt("run", CONFIRM_APP, "and another 50", "--session", "s-confirm", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    assert "waits for an answer to the request above; reply to it first" in again.stderr, again.stderr

    wrong = adkt("reply", CONFIRM_APP, "user", "s-confirm", call_id, "--answer", "{}", cwd=tmp_path)
    assert wrong.returncode == 1 and "reply --approve or --reject" in wrong.stderr

    replied = adkt("reply", CONFIRM_APP, "user", "s-confirm", call_id, "--approve", cwd=tmp_path)
    assert replied.returncode == 0, replied.stderr
    assert "result: {'sent': 50}" in replied.stdout or '"sent": 50' in replied.stdout

    done = adkt("pending", CONFIRM_APP, "user", "s-confirm", cwd=tmp_path)
    assert "nothing waits in session 's-confirm'" in done.stdout


JOB_APP = '''
from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_core.tools import LongRunningFunctionTool


def start_job(name: str) -> dict:
    """Starts a job that finishes later."""
    return {"status": "pending", "ticket": f"T-{name}"}


def script(request: LlmRequest):
    answers = [p.function_response.response for c in request.contents for p in c.parts if p.function_response]
    if not answers:
        return function_call_response("start_job", {"name": "report"})
    if answers[-1].get("status") == "pending":
        return text_response("the job is running")
    return text_response(f"the job says {answers[-1]['status']}")


root_agent = LlmAgent(name="jobs", model=ScriptedModel(script), tools=[LongRunningFunctionTool(start_job)])
'''


def test_a_long_running_tool_is_answered_with_reply_answer(tmp_path: Path) -> None:
    (tmp_path / "jobs.py").write_text(JOB_APP)
    first = adkt("run", "jobs.py", "run the report", "--session", "s-job", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert '? start_job({"name": "report"}) waits for its result' in first.stderr
    command = "adkt reply jobs.py user s-job "
    assert command in first.stderr and "--answer" in first.stderr
    call_id = first.stderr.split(command)[1].split()[0]

    replied = adkt("reply", "jobs.py", "user", "s-job", call_id, "--answer", '{"status": "done"}', cwd=tmp_path)
    assert replied.returncode == 0, replied.stderr
    assert "jobs: the job says done" in replied.stdout


def test_chat_with_session_asks_what_is_waiting_first(tmp_path: Path) -> None:
    first = adkt("run", CONFIRM_APP, "send 50", "--session", "s-resume", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    resumed = adkt("chat", CONFIRM_APP, "--session", "s-resume", cwd=tmp_path, stdin="y\n/quit\n")
    assert resumed.returncode == 0, resumed.stderr
    assert "? banker wants to run send_money" in resumed.stdout
    assert "sent" in resumed.stdout and "50" in resumed.stdout


# --- item 8: two runs at once; sessions after a run ----------------------------------------------------------


def test_two_runs_at_once_share_the_embedded_postgres(tmp_path: Path) -> None:
    copy_examples(tmp_path)
    runs = [
        adkt_background("run", "examples/support_desk.py", f"Where is invoice INV-4{n}?", "--session", f"s{n}",
                        cwd=tmp_path)  # fmt: skip
        for n in (2, 3)
    ]
    results = [(run, *run.communicate(timeout=180)) for run in runs]
    for run, stdout, stderr in results:
        assert "TRK-9001" in stdout or "awaiting payment" in stdout, stdout
        assert run.returncode == 0, stderr
        assert "postmaster.pid" not in stderr and len(stderr.strip().splitlines()) <= 3, stderr
    assert no_server_left(tmp_path)

    listed = adkt("sessions", "list", "support_desk", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "s2" in listed.stdout and "s3" in listed.stdout
    assert no_server_left(tmp_path)


def test_sessions_list_with_nothing_run_yet_says_so(tmp_path: Path) -> None:
    result = adkt("sessions", "list", "support_desk", cwd=tmp_path)
    assert result.returncode == 1
    assert "nothing has run here yet" in result.stderr


# --- item 10: small things ---------------------------------------------------------------------------------------


def test_help_version_flags_and_migrate(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:  # independent commands, side by side: each is mostly Python starting
        top, version, run_help, list_help, created = pool.map(lambda args: adkt(*args, cwd=tmp_path), [
            ("--help",), ("--version",), ("run", "--help"), ("sessions", "list", "--help"), ("migrate",)])  # fmt: skip
    assert top.returncode == 0 and not re.search(r"^\s+serve\s", top.stdout, re.M)  # no `adkt serve` command
    assert version.stdout.startswith("adkt ")
    assert "<bool>" not in run_help.stdout
    assert "<bool>" not in list_help.stdout

    assert created.returncode == 0, created.stderr
    assert "database created at schema revision" in created.stderr and "adk_sessions" in created.stderr
    again = adkt("migrate", cwd=tmp_path)
    assert "already at the newest schema" in again.stderr
    assert no_server_left(tmp_path)


# --- adkt create ------------------------------------------------------------------------------------------------------


def test_create_makes_an_app_that_runs_and_tests_without_a_key(tmp_path: Path) -> None:
    made = adkt("create", "my_bot", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert adkt("create", "my_bot", cwd=tmp_path).returncode == 1  # no silent overwrite

    ran = adkt("run", "my_bot/agent.py", "What time is it in Tokyo?", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "→ city_time" in ran.stdout and "Tokyo is at UTC+9." in ran.stdout

    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "my_bot"], cwd=tmp_path,
                            env=env_for(tmp_path), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout


# --- item 9: the dev console shows failures; --reload ---------------------------------------------------------

TOOL_APP = '''
from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response


def explode(what: str) -> dict:
    """Fails."""
    raise ValueError(f"cannot explode {what}")


def script(request: LlmRequest):
    if any(p.function_response for c in request.contents[-1:] for p in c.parts):
        return text_response("VERSION-1 after the tool")
    return function_call_response("explode", {"what": "the moon"})


app = App(name="exploder", root_agent=LlmAgent(name="exploder", model=ScriptedModel(script),
                                               tools=[FunctionTool(explode)]))
'''


def test_dev_logs_tool_errors_and_reloads_changed_apps(tmp_path: Path, database_url: str) -> None:
    app_file = tmp_path / "exploder.py"
    app_file.write_text(TOOL_APP)
    log = tmp_path / "dev.log"
    with log.open("w") as sink:
        dev = subprocess.Popen(
            [sys.executable, "-m", "adkt.main", "dev", "--reload", "--app", "exploder.py", "--port", str(free_port()),
             "--ui-port", str(free_port()), "--sim-port", "0", "--database-url", database_url],
            cwd=tmp_path, env=env_for(tmp_path), stdout=sink, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        wait_for(lambda: "--reload: watching" in log.read_text() or dev.poll() is not None, "adkt dev to start")
        assert dev.poll() is None, log.read_text()

        first = adkt("run", "exploder.py", "go", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert "VERSION-1 after the tool" in first.stdout
        wait_for(lambda: "tool explode of agent exploder failed: ValueError: cannot explode the moon" in log.read_text(),
                 "the tool error on the dev console")  # fmt: skip

        app_file.write_text(TOOL_APP.replace("VERSION-1", "VERSION-2"))
        wait_for(lambda: "worker restarted for exploder" in log.read_text(), "the reload")
        second = adkt("run", "exploder.py", "go", cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert "VERSION-2 after the tool" in second.stdout

        app_file.write_text("this is not python(\n")
        wait_for(lambda: "the worker keeps the previous code" in log.read_text(), "the failed reload")
        assert dev.poll() is None
    finally:
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=60)
    assert dev.returncode == 0, log.read_text()
