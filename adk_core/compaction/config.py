"""What compaction is configured with: how often, how much to keep, and who writes the summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError
from ..types import Content, Event


@runtime_checkable
class BaseEventsSummarizer(Protocol):
    """Writes the summary that stands in for a run of events.

    Unlike the seed's trait, which returns a whole event, a summarizer returns only the summary:
    the framework makes the compaction event around it (id, timestamp, covered range), because
    ids and clocks go through the runtime seam and, under the durable runtime, the summarizer runs
    in an activity while the event is made by the workflow.
    """

    async def summarize_events(self, events: Sequence[Event]) -> Content | None:
        """The summary of ``events`` (oldest first; the first may be an earlier compaction event,
        whose summary the new one must carry forward), or None to skip this compaction."""
        ...


@dataclass(frozen=True)
class EventsCompactionConfig:
    """Sliding-window compaction of a session's events (set on ``App.events_compaction_config``).

    Args:
        compaction_interval: compact once this many invocations have run since the last
            compaction (counted after its event).
        overlap_size: the newest invocations left out of each summary and kept verbatim, so the
            model still sees the latest exchanges word for word. Must be below the interval.
        summarizer: who writes the summary; None means an LlmEventsSummarizer on the root
            agent's model (the App fills it in).
    """

    compaction_interval: int
    overlap_size: int = 0
    summarizer: BaseEventsSummarizer | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.compaction_interval, int) or self.compaction_interval < 1:
            raise ConfigurationError(
                f"compaction_interval is {self.compaction_interval!r}; give a whole number of invocations, 1 or more"
            )
        if not isinstance(self.overlap_size, int) or not 0 <= self.overlap_size < self.compaction_interval:
            raise ConfigurationError(
                f"overlap_size is {self.overlap_size!r} with compaction_interval {self.compaction_interval}; give a "
                "whole number from 0 to compaction_interval - 1 (otherwise nothing would ever be summarized)"
            )
        if self.summarizer is not None and not isinstance(self.summarizer, BaseEventsSummarizer):
            raise ConfigurationError(
                f"summarizer is a {type(self.summarizer).__name__}; give an object with "
                "`async def summarize_events(self, events) -> Content | None`, e.g. LlmEventsSummarizer(model=...)"
            )
