"""`adkt chat` prints a streamed answer's tokens on one line, says when a retried call starts over,
and prints of the committed event only what was not streamed."""

from __future__ import annotations

from adk_core.types import Content, Event, Part
from adk_temporal.activities.streaming import STREAM_RESET
from adkt.commands._render import out
from adkt.commands._stream_print import TokenPrinter


def _printed(events: list[Event]) -> str:
    printer = TokenPrinter()
    with out.capture() as captured:
        for event in events:
            printer.show(event)
    return captured.get()


def _partial(text: str) -> Event:
    return Event(author="bot", content=Content.model(text), partial=True)


def test_tokens_share_one_line_and_the_final_text_is_not_repeated() -> None:
    final = Event(author="bot", content=Content.model("Hello there"))
    assert _printed([_partial("Hel"), _partial("lo"), _partial(" there"), final]) == "bot: Hello there\n"


def test_a_reset_starts_the_answer_again_on_a_new_line() -> None:
    reset = Event(author="bot", partial=True, custom_metadata={STREAM_RESET: {"attempt": 2}})
    final = Event(author="bot", content=Content.model("Hi!"))
    printed = _printed([_partial("Hel"), reset, _partial("Hi"), _partial("!"), final])
    assert printed == "bot: Hel\n(bot's model call restarted; its answer starts again)\nbot: Hi!\n"


def test_what_was_not_streamed_is_printed_from_the_committed_event() -> None:
    call = Event(author="bot", content=Content(role="model", parts=[Part(text="Let me check"),
                                                                    Part.from_function_call("weather", {"city": "Paris"})]))
    printed = _printed([_partial("Let me check"), call, Event(author="bot", content=Content.model("Sunny"))])
    assert printed.splitlines() == ["bot: Let me check", 'bot → weather({"city": "Paris"})', "bot: Sunny"]
