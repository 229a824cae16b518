"""Compact, readable rendering of events and sessions with rich."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from adk_core.types import Event

# Status lines go to stderr so that `--json` output on stdout stays machine-readable.
out = Console(highlight=False)
# soft_wrap: errors and hints stay one line each (a terminal wraps them; a pipe or a test reads them whole).
err = Console(stderr=True, highlight=False, soft_wrap=True)


def short_json(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_lines(event: Event) -> list[str]:
    """One rich-markup line per part: `author: text`, `author → tool(args)`, `author ← tool: result`."""
    author = f"[bold cyan]{escape(event.author)}[/]"
    lines: list[str] = []
    for part in event.content.parts if event.content else []:
        if part.function_call is not None:
            call = part.function_call
            lines.append(f"{author} [yellow]→ {escape(call.name)}[/]({escape(short_json(call.args))})")
        elif part.function_response is not None:
            resp = part.function_response
            lines.append(f"{author} [green]← {escape(resp.name)}[/]: {escape(short_json(resp.response))}")
        elif part.text and not part.thought:
            lines.append(f"{author}: {escape(part.text)}")
        elif part.inline_data is not None or part.file_data is not None:
            lines.append(f"{author}: [dim]<attachment>[/]")
    if event.actions.compaction is not None:
        lines.append(f"[dim]summary of earlier events: {escape(_compacted_text(event))}[/]")
    if event.error_message or event.error_code:
        lines.append(f"{author} [red]error {escape(str(event.error_code or ''))}: {escape(event.error_message or '')}[/]")
    return lines


def print_event(event: Event, console: Console = out) -> None:
    for line in event_lines(event):
        console.print(line)


def summary(event: Event) -> str:
    """Plain one-line summary of an event's content, for tables."""
    parts = []
    for part in event.content.parts if event.content else []:
        if part.function_call is not None:
            parts.append(f"→ {part.function_call.name}({short_json(part.function_call.args, 60)})")
        elif part.function_response is not None:
            parts.append(f"← {part.function_response.name}: {short_json(part.function_response.response, 60)}")
        elif part.text and not part.thought:
            parts.append(part.text if len(part.text) <= 100 else part.text[:99] + "…")
    if event.actions.compaction is not None:
        text = _compacted_text(event)
        parts.append(f"summary of earlier events: {text if len(text) <= 100 else text[:99] + '…'}")
    if event.error_message:
        parts.append(f"error: {event.error_message}")
    return " | ".join(parts)


def _compacted_text(event: Event) -> str:
    """The text of a compaction event's summary (adk_core/compaction)."""
    compaction = event.actions.compaction
    return "".join(p.text or "" for p in compaction.compacted_content.parts) if compaction else ""


def timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S") if seconds else ""
