"""The app tests/integration/test_streaming_durable.py runs in worker subprocesses it SIGKILLs.

One streamed model call: ``WORDS`` partial words, then the whole text. The first attempt stops after
``HANG_AFTER`` words (leaving a marker file in $STREAM_MARKER_DIR) and sleeps, so the test can kill
the worker mid-stream once its client has shown those words; the retry on the next worker finds
the marker and streams every word. $STREAM_WORD_SECONDS paces the words (0.01 s by default).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from adk_core import AgentExecution, App, Content, LlmAgent, LlmRequest, LlmResponse
from adk_core.agents.execution import MODEL_RETRY
from adk_core.models import text_response

WORDS = [f"w{i} " for i in range(20)]
HANG_AFTER = 5
MARKER = "stream.marker"
HANG_SECONDS = 60.0


class StopsOnceMidStream:
    @property
    def name(self) -> str:
        return "stops-once"

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        marker = Path(os.environ["STREAM_MARKER_DIR"]) / MARKER
        for i, word in enumerate(WORDS):
            if i == HANG_AFTER and not marker.exists():
                marker.write_text(str(os.getpid()))
                await asyncio.sleep(HANG_SECONDS)
            yield LlmResponse(content=Content.model(word), partial=True)
            await asyncio.sleep(float(os.environ.get("STREAM_WORD_SECONDS", "0.01")))
        yield text_response("".join(WORDS))


# The killed worker's model call is noticed in 3 s, not the default 10 s, and retried after 0.2 s (not
# 1 s): the test is about what the client shows of the retry (tests/integration/test_crash.py keeps
# one crash on the defaults).
EXECUTION = AgentExecution(
    model_heartbeat_timeout=timedelta(seconds=3),
    model_retry=dataclasses.replace(MODEL_RETRY, initial_interval=timedelta(milliseconds=200)),
)

app = App(
    name="stream_crash_app",
    root_agent=LlmAgent(name="streamer", model=StopsOnceMidStream(), execution=EXECUTION),
)
