"""Find the clock, randomness and fresh ids read directly by an app's workflow code, before it ships.

Callbacks, plugins, instruction providers, custom agents and inline tools run inside the workflow,
but their modules pass through Temporal's sandbox unchecked (workflows/sandbox.py: apps are
shared with the sandbox, not re-imported in it). A callback that calls ``time.time()`` works on the
first run and breaks the workflow when it replays on another worker or after a deploy.

``check_app`` runs one scripted turn of the app in-process, as the workflow would run it (model
calls and activity tools are answered without running them: they are activities, free to do as
they like) and watches every call made *directly from the app's own code* (not from the
framework, the standard library or third-party libraries) to the wall clock, the process's random
generators and random uuids. Each finding names the function, the call, where it is, and the fix:
the runtime seam (``ctx.runtime.now()`` / ``new_id()`` / ``random()``), which is replay-safe.

Used by ``adkt check APP`` (exit code 1 on a finding) and by ``adkt worker`` at start (a warning).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import secrets
import sys
import sysconfig
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from types import FrameType
from typing import Any

from adk_core import App, InMemoryRunner, LlmRequest, LlmResponse, ScriptedModel
from adk_core.agents.context import InvocationContext, ToolContext
from adk_core.agents.run_config import RunConfig
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.models.base import Model
from adk_core.runtime import LocalRuntime
from adk_core.tools.base import BaseTool
from adk_core.types import Content, Part
from adk_temporal.workflows.runtime import runs_in_workflow

__all__ = ["DeterminismFinding", "DeterminismReport", "check_app"]

_CLOCK_FIX = "use ctx.runtime.now() (seconds since the epoch on the workflow's clock: the same on replay)"
_RANDOM_FIX = "use ctx.runtime.random() (a float in [0, 1) from the workflow's seeded generator)"
_ID_FIX = "use ctx.runtime.new_id() (a uuid4 string from the workflow: the same on replay)"

# C functions by (the object they are bound to, name): time.time is bound to the time module,
# datetime.now to the datetime class, random.random to the random module's shared instance.
_C_CALLS: dict[tuple[int, str], tuple[str, str]] = {}
for _owner, _label, _names, _fix in (
    (time, "time", ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"), _CLOCK_FIX),
    (datetime, "datetime.datetime", ("now", "utcnow", "today"), _CLOCK_FIX),
    (date, "datetime.date", ("today",), _CLOCK_FIX),
    (random._inst, "random", ("random", "getrandbits", "randbytes"), _RANDOM_FIX),
    (os, "os", ("urandom",), _RANDOM_FIX),
):
    for _name in _names:
        _C_CALLS[(id(_owner), _name)] = (f"{_label}.{_name}()", _fix)
# Python functions by code object: uuid's, and the random module's functions (bound methods of its
# shared instance; a seeded random.Random(...) of your own is deterministic and not reported).
_PY_CALLS: dict[Any, tuple[str, str]] = {
    uuid.uuid1.__code__: ("uuid.uuid1()", _ID_FIX),
    uuid.uuid4.__code__: ("uuid.uuid4()", _ID_FIX),
}
_RANDOM_FILE = random.__file__
_SECRETS_FILE = secrets.__file__
_FRAMEWORK = {"adk_core", "adk_temporal", "adkt", "temporalio", "pydantic", "pydantic_core"}
_SITE_PACKAGES = tuple({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})

CHECK_MESSAGE = "Hello! (a scripted turn from adkt check)"
CHECK_TIMEOUT_SECONDS = 30.0
CHECK_MAX_MODEL_CALLS = 25
"""Model calls per scripted turn: a script that loops on a tool is cut short (and says so)."""


@dataclass(frozen=True)
class DeterminismFinding:
    """One direct call to the clock, randomness or a random id from workflow code."""

    function: str
    """The app's function that runs in the workflow (a callback, an instruction provider...)."""
    call: str
    """e.g. ``time.time()``."""
    location: str
    """``file:line`` of the call."""
    fix: str

    def __str__(self) -> str:
        return f"{self.function} calls {self.call} at {self.location}: {self.fix}"


@dataclass
class DeterminismReport:
    app_name: str
    findings: list[DeterminismFinding] = field(default_factory=list)
    stopped: str | None = None
    """Why the scripted turn ended early (code after that point was not checked), or None."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        lines = [str(f) for f in self.findings]
        if self.stopped:
            lines.append(f"(the scripted turn stopped early, so later code was not checked: {self.stopped})")
        return lines


async def check_app(app: App, *, messages: tuple[str, ...] = (CHECK_MESSAGE,), timeout: float = CHECK_TIMEOUT_SECONDS) -> DeterminismReport:
    """Run scripted turns of ``app`` with the workflow code's clock, randomness and id calls watched.

    Models are not called: a ScriptedModel answers with its script, any other model with a
    scripted answer that calls each of the agent's tools once (arguments made up from their
    schemas) and then transfers to each sub-agent once, so callbacks around tools and sub-agents run.
    Tools that run as activities are not run (their result is made up); inline and framework tools are.
    """
    report = DeterminismReport(app.name)
    watch = _Watch(_app_packages(app))
    # Compaction's summarizer runs in an activity (adk.summarize_events): not workflow code, and it
    # would call the summarizer's real model.
    checked = dataclasses.replace(app, events_compaction_config=None)
    runner = InMemoryRunner(app=checked, runtime=_CheckRuntime(watch))
    try:
        async with asyncio.timeout(timeout):
            for message in messages:
                with watch.active():
                    async for _ in runner.run_async(
                        user_id="adkt-check", session_id="adkt-check", new_message=Content.user(message),
                        run_config=RunConfig(max_llm_calls=CHECK_MAX_MODEL_CALLS),
                    ):
                        pass
    except TimeoutError:
        report.stopped = f"no answer within {timeout:g} s (a callback that waits on something?)"
    except Exception as e:  # noqa: BLE001  (the findings so far stand; the report says the turn stopped)
        report.stopped = f"{type(e).__name__}: {e}"
    report.findings = list(watch.findings.values())
    return report


def _app_packages(app: App) -> set[str]:
    """Top-level packages of the app's own code, so it counts as the app's even when installed."""
    packages = {type(app.root_agent).__module__.split(".")[0]}
    for agent in _agents(app.root_agent):
        for value in vars(agent).values():
            for item in value if isinstance(value, list) else [value]:
                module = getattr(item, "__module__", None)
                if callable(item) and isinstance(module, str):
                    packages.add(module.split(".")[0])
    return packages - _FRAMEWORK


def _agents(agent: Any) -> Iterator[Any]:
    yield agent
    for sub in getattr(agent, "sub_agents", ()):
        yield from _agents(sub)


class _Watch:
    """A profile hook (``sys.setprofile``) that records trapped calls made directly by app code."""

    def __init__(self, app_packages: set[str]) -> None:
        self.app_packages = app_packages
        self.findings: dict[tuple[str, str], DeterminismFinding] = {}
        self._paused = 0
        self._is_app: dict[Any, bool] = {}

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        previous = sys.getprofile()
        sys.setprofile(self._profile)
        try:
            yield
        finally:
            sys.setprofile(previous)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Activity code (model calls, activity tools): not workflow code, not watched."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if self._paused:
            return
        if event == "c_call":
            owner = getattr(arg, "__self__", None)
            trapped = _C_CALLS.get((id(owner), getattr(arg, "__name__", "")))
            if trapped is not None and self._from_app(frame):
                self._record(frame, *trapped)
        elif event == "call":
            trapped = _PY_CALLS.get(frame.f_code)
            code_file = frame.f_code.co_filename
            if trapped is None and code_file == _RANDOM_FILE and frame.f_locals.get("self") is random._inst:
                trapped = (f"random.{frame.f_code.co_name}()", _RANDOM_FIX)
            elif trapped is None and code_file == _SECRETS_FILE:
                trapped = (f"secrets.{frame.f_code.co_name}()", _RANDOM_FIX)
            caller = frame.f_back
            if trapped is not None and caller is not None and self._from_app(caller):
                self._record(caller, *trapped)

    def _from_app(self, frame: FrameType) -> bool:
        code = frame.f_code
        known = self._is_app.get(code)
        if known is None:
            module = str(frame.f_globals.get("__name__", ""))
            top = module.split(".")[0]
            if top in _FRAMEWORK or top in sys.stdlib_module_names:
                known = False
            elif code.co_filename.startswith(_SITE_PACKAGES):
                known = top in self.app_packages  # a third-party library's own calls are not the app's
            else:
                known = True
            self._is_app[code] = known
        return known

    def _record(self, frame: FrameType, call: str, fix: str) -> None:
        # The function the workflow called into: the outermost app frame of this call chain.
        entry = frame
        while entry.f_back is not None and self._from_app(entry.f_back):
            entry = entry.f_back
        location = f"{_short(frame.f_code.co_filename)}:{frame.f_lineno}"
        function = f"{entry.f_code.co_qualname} ({_short(entry.f_code.co_filename)}:{entry.f_code.co_firstlineno})"
        self.findings.setdefault((location, call), DeterminismFinding(function, call, location, fix))


def _short(path: str) -> str:
    with contextlib.suppress(ValueError):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            return relative
    return path


class _CheckRuntime(LocalRuntime):
    """The workflow's view of the world: model calls and activity tools are answered (they run in
    activities, not here); everything that runs in the workflow runs, under the watch."""

    def __init__(self, watch: _Watch) -> None:
        self.watch = watch
        self._visited: set[str] = set()
        # SimulatorPlugin asks a person through the runtime's channel when it has one: here a
        # scripted decision, so the turn goes on instead of waiting for someone.
        self.simulator_channel = _ScriptedDecisions()

    async def generate_content(
        self, model: Model, request: LlmRequest, *, stream: bool, ctx: InvocationContext
    ) -> AsyncIterator[LlmResponse]:
        await asyncio.sleep(0)  # a turn that never waits on anything would otherwise never see its timeout
        with self.watch.paused():
            if isinstance(model, ScriptedModel):
                responses = [r async for r in model.generate_content(request, stream=stream)]
            else:
                responses = [self._scripted(request, ctx)]
        for response in responses:
            yield response

    def _scripted(self, request: LlmRequest, ctx: InvocationContext) -> LlmResponse:
        self._visited.add(ctx.agent.name)
        tools = {name: tool for name, tool in request.tools_dict.items() if name != "transfer_to_agent"}
        if tools and not tool_responses_this_turn(request):
            parts = [Part.from_function_call(name, _made_up_args(tool)) for name, tool in tools.items()]
            return LlmResponse(content=Content(role="model", parts=parts), turn_complete=True)
        next_agent = next((a.name for a in ctx.agent.sub_agents if a.name not in self._visited), None)
        if next_agent is not None and "transfer_to_agent" in request.tools_dict:
            return function_call_response("transfer_to_agent", {"agent_name": next_agent})
        return text_response("adkt check: a scripted answer")

    async def run_tool(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if runs_in_workflow(tool):
            return await tool.run_async(args=args, tool_context=tool_context)
        return {"adkt_check": f"{tool.name} runs in an activity; not run by the check"}

    async def run_sync(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)  # as in the workflow: no threads (and the watch is per thread)


class _ScriptedDecisions:
    """A person in the simulator who always answers with the same text."""

    async def ask(self, ask: Any, ctx: InvocationContext) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": "adkt check: a scripted decision"}]}}]}


def _made_up_args(tool: BaseTool) -> dict[str, Any]:
    declaration = tool.declaration()
    schema = (declaration.parameters if declaration else None) or {}
    properties = schema.get("properties") or {}
    samples = {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}
    return {name: samples.get(str(properties.get(name, {}).get("type")), "x") for name in schema.get("required") or []}
