"""A compaction event (no content of its own) shows its summary in `adkt` output, not an empty line."""

from adk_core.types import Content, Event
from adk_core.types.event import EventActions, EventCompaction
from adkt.commands._render import event_lines, summary


def test_a_compaction_event_shows_its_summary() -> None:
    compaction = EventCompaction(start_timestamp=0, end_timestamp=1, compacted_content=Content.user("Asked about INV-42."))
    event = Event(id="i1/compaction", author="user", timestamp=1.0, actions=EventActions(compaction=compaction))
    assert event_lines(event) == ["[dim]summary of earlier events: Asked about INV-42.[/]"]
    assert summary(event) == "summary of earlier events: Asked about INV-42."
