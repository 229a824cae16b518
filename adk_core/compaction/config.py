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
    """Compaction of a session's events (set on ``App.events_compaction_config``), after an
    invocation, by either of two triggers (give one or both).

    Args:
        compaction_interval: compact once this many invocations have run since the last
            compaction (counted after its event). None: no interval trigger.
        overlap_size: the newest invocations left out of each interval compaction and kept
            verbatim, so the model still sees the latest exchanges word for word. Must be below
            the interval.
        summarizer: who writes the summary; None means an LlmEventsSummarizer on the root
            agent's model (the App fills it in).
        token_threshold: compact once the newest model call since the last compaction reported
            at least this many prompt tokens (its response's ``usage_metadata.prompt_token_count``).
            A model that reports no prompt tokens never trips it. None: no token trigger.
        event_retention_size: with ``token_threshold``: the newest events kept verbatim out of a
            token-triggered compaction (0 summarizes everything so far). A tool call and its
            response are never split, and an unanswered call stays out with what follows it.
    """

    compaction_interval: int | None = None
    overlap_size: int = 0
    summarizer: BaseEventsSummarizer | None = None
    token_threshold: int | None = None
    event_retention_size: int | None = None

    def __post_init__(self) -> None:
        if self.compaction_interval is None and self.token_threshold is None:
            raise ConfigurationError(
                "EventsCompactionConfig has no trigger; give compaction_interval=N (every N invocations), "
                "token_threshold=N with event_retention_size=K (when a prompt reaches N tokens), or both"
            )
        if self.compaction_interval is not None and (
            not _whole(self.compaction_interval) or self.compaction_interval < 1
        ):
            raise ConfigurationError(
                f"compaction_interval is {self.compaction_interval!r}; give a whole number of invocations, 1 or more "
                "(or None for the token trigger alone)"
            )
        if self.compaction_interval is None:
            if self.overlap_size != 0:
                raise ConfigurationError(
                    f"overlap_size is {self.overlap_size!r} but there is no compaction_interval; overlap_size applies "
                    "to the interval trigger (the token trigger keeps event_retention_size events instead)"
                )
        elif not _whole(self.overlap_size) or not 0 <= self.overlap_size < self.compaction_interval:
            raise ConfigurationError(
                f"overlap_size is {self.overlap_size!r} with compaction_interval {self.compaction_interval}; give a "
                "whole number from 0 to compaction_interval - 1 (otherwise nothing would ever be summarized)"
            )
        if (self.token_threshold is None) != (self.event_retention_size is None):
            raise ConfigurationError(
                f"token_threshold is {self.token_threshold!r} and event_retention_size {self.event_retention_size!r}; "
                "give both (the prompt tokens that trigger a compaction, and how many newest events it keeps) or neither"
            )
        if self.token_threshold is not None and (not _whole(self.token_threshold) or self.token_threshold < 1):
            raise ConfigurationError(
                f"token_threshold is {self.token_threshold!r}; give a whole number of prompt tokens, 1 or more"
            )
        if self.event_retention_size is not None and (
            not _whole(self.event_retention_size) or self.event_retention_size < 0
        ):
            raise ConfigurationError(
                f"event_retention_size is {self.event_retention_size!r}; give a whole number of events, 0 or more"
            )
        if self.summarizer is not None and not isinstance(self.summarizer, BaseEventsSummarizer):
            raise ConfigurationError(
                f"summarizer is a {type(self.summarizer).__name__}; give an object with "
                "`async def summarize_events(self, events) -> Content | None`, e.g. LlmEventsSummarizer(model=...)"
            )


def _whole(value: object) -> bool:
    """An int that is not a bool (True would pass as 1)."""
    return isinstance(value, int) and not isinstance(value, bool)
