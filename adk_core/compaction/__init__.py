"""Context compaction: older events summarized into one event the model sees in their place.

The configuration (``EventsCompactionConfig`` on the App) and the summarizer are here; the
contents builder applies compaction events (adk_core.flow.contents); the Runner compacts after
each invocation in-process, the flow before a model call when the token trigger is due inside an
invocation (adk_core.flow.llm_flow), and the durable workflows through the
``adk.summarize_events`` activity. Stored events are never deleted.
"""

from .config import BaseEventsSummarizer, EventsCompactionConfig
from .llm_summarizer import LlmEventsSummarizer
from .planner import (
    COMPACTION_AUTHOR,
    CompactionPlan,
    compact_events,
    compaction_event,
    compaction_event_id,
    may_be_due,
    plan_compaction,
    prompt_over_threshold,
)

__all__ = [
    "COMPACTION_AUTHOR",
    "BaseEventsSummarizer",
    "CompactionPlan",
    "EventsCompactionConfig",
    "LlmEventsSummarizer",
    "compact_events",
    "compaction_event",
    "compaction_event_id",
    "may_be_due",
    "plan_compaction",
    "prompt_over_threshold",
]
