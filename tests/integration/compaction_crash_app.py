"""The app tests/integration/test_compaction_crash.py runs in worker subprocesses it SIGKILLs.

It compacts after every second invocation; the summarizer hangs on its first attempt, leaving a
marker file in $CRASH_MARKER_DIR so the test can kill the worker inside the summarizing step. The
retry (on the next worker) finds the marker and answers at once.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.models.base import LlmRequest

HANG_SECONDS = 30.0
SUMMARY_MARKER = "summary.marker"


async def _summary(request: LlmRequest) -> str:
    marker = Path(os.environ["CRASH_MARKER_DIR"]) / SUMMARY_MARKER
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        await asyncio.sleep(HANG_SECONDS)
    return f"summary written by pid {os.getpid()}"


app = App(
    name="compaction_crasher",
    root_agent=LlmAgent(name="crasher", model=ScriptedModel(lambda request: "ok", name="crash-model")),
    events_compaction_config=EventsCompactionConfig(
        2, 0, summarizer=LlmEventsSummarizer(ScriptedModel(_summary, name="crash-summarizer"))
    ),
)
