"""`adkt chat`'s printing of a streamed turn: tokens as they arrive, then what the final event adds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from adkt.commands._render import out, print_event

if TYPE_CHECKING:
    from adk_core.types import Event


class TokenPrinter:
    """Prints partial text on one line per answer; the committed event then prints only what was not
    streamed (tool calls, errors), or all of it when nothing was."""

    def __init__(self) -> None:
        self._streamed = ""  # the text printed for the answer under way

    def show(self, event: Event) -> None:
        from adk_temporal.activities.streaming import (
            is_stream_reset,  # here: the CLI starts without the worker's modules
        )

        if is_stream_reset(event):
            self._end_line()
            out.print(f"[dim]({escape(event.author)}'s model call restarted; its answer starts again)[/]")
            return
        if event.partial:
            text = "".join(p.text or "" for p in (event.content.parts if event.content else []) if not p.thought)
            if text:
                if not self._streamed:
                    out.print(f"[bold cyan]{escape(event.author)}[/]: ", end="")
                out.print(escape(text), end="")
                self._streamed += text
            return
        streamed = self._streamed
        self._end_line()
        if streamed and event.content is not None and event.text == streamed:
            rest = [p for p in event.content.parts if not (p.text and not p.thought)]
            event = event.model_copy(update={"content": event.content.model_copy(update={"parts": rest})})
        print_event(event)

    def _end_line(self) -> None:
        if self._streamed:
            out.print()
            self._streamed = ""
