"""A 20-turn conversation against simulated provider caches, for the prompt-caching test and bench.

There are no API keys here, so the providers' prompt caches are played by httpx MockTransports that
follow the providers' documented behaviour and answer with the usage the API would report:

- Anthropic (docs.anthropic.com, "Prompt caching"): the request is the blocks tools, system,
  messages in that order. Each ``cache_control`` breakpoint whose prefix holds at least 1,024 tokens
  writes that prefix; a breakpoint reads the longest prefix written earlier that ends on it or on
  one of the 20 blocks before it. ``cache_read_input_tokens`` is the prefix read,
  ``cache_creation_input_tokens`` what was written past it, ``input_tokens`` the rest. Nothing is
  cached without a breakpoint.
- OpenAI (platform.openai.com, "Prompt caching"): automatic for prompts of 1,024 tokens or more;
  the longest prefix shared with an earlier request is served from the cache, counted from 1,024 in
  steps of 128 tokens, and reported as ``prompt_tokens_details.cached_tokens``.

Tokens are estimated as 4 characters of compact JSON each. The figures measure where our adapters
put breakpoints and how they report usage, not the providers themselves.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from adk_core import InMemoryRunner, LlmAgent
from adk_core.models import Model, UsageMetadata

MIN_CACHEABLE_TOKENS = 1024
LOOKBACK_BLOCKS = 20
OPENAI_CACHE_STEP = 128

INSTRUCTION = " ".join(
    [
        "You are a travel assistant for a small agency. Plan trips, answer questions about",
        "destinations, and use the tools to check the weather, search flights and book hotels.",
    ]
    + [
        f"Policy {n}: confirm dates, budget and traveller count before booking; quote prices in the "
        f"traveller's currency; never book without an explicit yes; mention visa rules for rule set {n}."
        for n in range(1, 41)
    ]
)
"""About 1,500 tokens: an agent instruction with the house rules, the stable prefix of every call."""

USER_MESSAGES = [
    "I want to visit Lisbon in May. What's the weather like there?",
    "Nice. What are the main neighbourhoods to stay in?",
    "Which one is best for a family with two kids?",
    "Find flights from Berlin to Lisbon on May 12.",
    "The morning one looks good. How long is the flight?",
    "What should we see on the first day?",
    "Is the tram 28 worth it with kids?",
    "Book a hotel in Belem for 4 nights from May 12.",
    "Does it have breakfast included?",
    "What's the weather going to be in Porto the same week?",
    "Could we do a day trip to Sintra?",
    "How do we get there by train?",
    "What about food: what should the kids try?",
    "Find flights from Lisbon back to Berlin on May 16.",
    "Any restaurants near the hotel you'd recommend?",
    "Is it safe to walk around in the evening?",
    "What's the weather in Sintra on May 14?",
    "Summarise the plan so far, day by day.",
    "What did we say the budget was? Keep it under 3000 euros.",
    "Great, that's all. Thanks!",
]


def get_weather(city: str, date: str) -> dict:
    """The forecast for a city on a date (YYYY-MM-DD)."""
    return {"city": city, "date": date, "forecast": "sunny", "high_c": 24, "low_c": 15}


def search_flights(origin: str, destination: str, date: str) -> dict:
    """Flights between two cities on a date, cheapest first."""
    return {"flights": [{"departs": "07:40", "price_eur": 129}, {"departs": "13:05", "price_eur": 164}]}


def book_hotel(area: str, nights: int, check_in: str) -> dict:
    """Book a family room in an area of the city for some nights from check_in."""
    return {"booking": "HX-2291", "area": area, "nights": nights, "breakfast": True}


_CALLS = {
    "weather": ("get_weather", {"city": "Lisbon", "date": "2026-05-12"}),
    "flights": ("search_flights", {"origin": "Berlin", "destination": "Lisbon", "date": "2026-05-12"}),
    "hotel": ("book_hotel", {"area": "Belem", "nights": 4, "check_in": "2026-05-12"}),
}


def _answer(turn: int) -> str:
    return (
        f"Here is what I found for step {turn} of your trip. "
        + "Lisbon in May is warm and bright, trams and trains are easy with children, and the "
        "riverside in Belem is calm in the evening. " * 3
    )


def next_move(last_user_text: str | None, turn: int) -> tuple[str, dict[str, Any]] | str:
    """The scripted model's move: a tool call when the user's text asks for one, else an answer."""
    if last_user_text is not None:
        for word, call in _CALLS.items():
            if word in last_user_text.lower() or (word == "hotel" and "book" in last_user_text.lower()):
                return call
    return _answer(turn)


def estimate_tokens(value: Any) -> int:
    return max(1, len(_canonical(value)) // 4)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _without_marker(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


@dataclass
class SimulatedAnthropic:
    """Plays the Messages API with Anthropic's prompt cache (see the module docstring)."""

    written: set[str] = field(default_factory=set)
    usages: list[dict[str, int]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def _blocks(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        blocks = [("tools", tool) for tool in body.get("tools", [])]
        system = body.get("system")
        if isinstance(system, str):
            blocks.append(("system", {"type": "text", "text": system}))
        elif system:
            blocks.extend(("system", block) for block in system)
        for message in body["messages"]:
            blocks.extend((message["role"], block) for block in message["content"])
        return blocks

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        """What the API reports for ``body``, updating the cache as the API would."""
        prefix_hash, total = "", 0
        hashes, ends = [], []
        for where, block in self._blocks(body):
            prefix_hash = hashlib.sha256(
                (prefix_hash + where + _canonical(_without_marker(block))).encode()
            ).hexdigest()
            total += estimate_tokens(_without_marker(block))
            hashes.append(prefix_hash)
            ends.append(total)
        breakpoints = [i for i, (_, block) in enumerate(self._blocks(body)) if "cache_control" in block]
        assert len(breakpoints) <= 4, f"the API refuses more than 4 cache_control blocks: {len(breakpoints)}"
        read = 0
        for point in breakpoints:
            for i in range(point, max(-1, point - LOOKBACK_BLOCKS), -1):
                if hashes[i] in self.written:
                    read = max(read, ends[i])
                    break
        cacheable = [p for p in breakpoints if ends[p] >= MIN_CACHEABLE_TOKENS]
        self.written.update(hashes[p] for p in cacheable)
        created = max(0, ends[cacheable[-1]] - read) if cacheable else 0
        return {"input_tokens": total - read - created, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": created}  # fmt: skip

    def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        usage = self.usage(body)
        last = body["messages"][-1]["content"]
        texts = [b["text"] for b in last if b["type"] == "text"]
        move = next_move(texts[-1] if texts and not any(b["type"] == "tool_result" for b in last) else None,
                         len(self.usages))  # fmt: skip
        if isinstance(move, str):
            content = [{"type": "text", "text": move}]
        else:
            name, args = move
            content = [{"type": "tool_use", "id": f"toolu_{len(self.usages)}", "name": name, "input": args}]
        usage["output_tokens"] = estimate_tokens(content)
        self.usages.append(usage)
        message = {"id": f"msg_{len(self.usages)}", "type": "message", "role": "assistant", "model": body["model"],
                   "content": content, "stop_reason": "end_turn" if isinstance(move, str) else "tool_use",
                   "usage": usage}  # fmt: skip
        return httpx.Response(200, json=message)


@dataclass
class SimulatedOpenAI:
    """Plays Chat Completions with OpenAI's automatic prompt cache (see the module docstring)."""

    seen: list[str] = field(default_factory=list)
    usages: list[dict[str, Any]] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        text = _canonical(body.get("tools", [])) + _canonical(body["messages"])
        total = len(text) // 4
        shared = max((_common_prefix(text, earlier) for earlier in self.seen), default=0) // 4
        self.seen.append(text)
        cached = 0
        if total >= MIN_CACHEABLE_TOKENS and shared >= MIN_CACHEABLE_TOKENS:
            steps = (shared - MIN_CACHEABLE_TOKENS) // OPENAI_CACHE_STEP
            cached = MIN_CACHEABLE_TOKENS + steps * OPENAI_CACHE_STEP
        return {"prompt_tokens": total, "prompt_tokens_details": {"cached_tokens": cached}}

    def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        usage = self.usage(body)
        last = body["messages"][-1]
        move = next_move(last["content"] if last["role"] == "user" else None, len(self.usages))
        if isinstance(move, str):
            message: dict[str, Any] = {"role": "assistant", "content": move}
        else:
            name, args = move
            call = {"id": f"call_{len(self.usages)}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        usage["completion_tokens"] = estimate_tokens(message)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self.usages.append(usage)
        choice = {
            "index": 0,
            "message": message,
            "finish_reason": "stop" if isinstance(move, str) else "tool_calls",
        }
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "model": body["model"],
                                         "choices": [choice], "usage": usage})  # fmt: skip


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass
class ConversationUsage:
    """What a conversation's model calls reported, summed from the events the runner recorded."""

    model_calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    def as_usage(self) -> UsageMetadata:
        """The totals as one call's usage (prices are linear, so its cost is the conversation's)."""
        return UsageMetadata(
            prompt_token_count=self.prompt_tokens,
            cached_content_token_count=self.cached_tokens,
            cache_creation_token_count=self.cache_write_tokens,
            candidates_token_count=self.output_tokens,
        )

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


async def run_conversation(model: Model, turns: int = len(USER_MESSAGES)) -> ConversationUsage:
    """Run the travel conversation's first ``turns`` messages through the in-process runner."""
    agent = LlmAgent(name="travel", model=model, instruction=INSTRUCTION,
                     tools=[get_weather, search_flights, book_hotel])  # fmt: skip
    runner = InMemoryRunner(agent, app_name="caching")
    total = ConversationUsage()
    for message in USER_MESSAGES[:turns]:
        for event in await runner.run(message, session_id="trip"):
            usage = event.usage_metadata
            if not usage or event.partial:
                continue
            total.model_calls += 1
            total.prompt_tokens += usage.get("prompt_token_count") or 0
            total.cached_tokens += usage.get("cached_content_token_count") or 0
            total.cache_write_tokens += usage.get("cache_creation_token_count") or 0
            total.output_tokens += usage.get("candidates_token_count") or 0
    return total


@dataclass
class SimulatedGemini:
    """Plays the Gemini API's explicit context caching (ai.google.dev, "Context caching").

    ``cachedContents`` create and list; generateContent with ``cachedContent`` refuses a request that
    also sets systemInstruction, tools or toolConfig (as the API does) and reports the entry's tokens
    as ``cachedContentTokenCount``. A create under 1,024 tokens is refused with a 400. Implicit
    caching is not played: every other prompt token is reported uncached.
    """

    now: float
    min_tokens: int = MIN_CACHEABLE_TOKENS
    unavailable: int = 0
    """How many calls naming a cache entry to answer with 503 first (a retried model call)."""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    creates: list[dict[str, Any]] = field(default_factory=list)
    lists: int = 0
    usages: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/cachedContents") and request.method == "GET":
            self.lists += 1
            return httpx.Response(200, json={"cachedContents": [e["wire"] for e in self.entries.values()]})
        body = json.loads(request.content)
        if path.endswith("/cachedContents"):
            return self._create(body)
        self.bodies.append(body)
        cached = 0
        if name := body.get("cachedContent"):
            if any(key in body for key in ("systemInstruction", "tools", "toolConfig")):
                message = "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config."
                return httpx.Response(
                    400, json={"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
                )
            if name not in self.entries:
                return httpx.Response(
                    403,
                    json={
                        "error": {
                            "code": 403,
                            "message": "CachedContent not found (or permission denied)",
                            "status": "PERMISSION_DENIED",
                        }
                    },
                )
            cached = self.entries[name]["tokens"]
            if self.unavailable > 0:
                self.unavailable -= 1
                return httpx.Response(
                    503, json={"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
                )
        rest = {k: v for k, v in body.items() if k not in ("generationConfig", "cachedContent")}
        usage = {"promptTokenCount": cached + estimate_tokens(rest), "cachedContentTokenCount": cached}
        last = body["contents"][-1]["parts"]
        texts = [p["text"] for p in last if "text" in p]
        move = next_move(texts[-1] if texts else None, len(self.usages))
        part = (
            {"text": move} if isinstance(move, str) else {"functionCall": {"name": move[0], "args": move[1]}}
        )
        usage["candidatesTokenCount"] = estimate_tokens(part)
        usage["totalTokenCount"] = usage["promptTokenCount"] + usage["candidatesTokenCount"]
        self.usages.append(usage)
        candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
        return httpx.Response(200, json={"candidates": [candidate], "usageMetadata": usage})

    def _create(self, body: dict[str, Any]) -> httpx.Response:
        self.creates.append(body)
        tokens = estimate_tokens({k: v for k, v in body.items() if k not in ("model", "displayName", "ttl")})
        if tokens < self.min_tokens:
            message = f"Cached content is too small. total_token_count={tokens}, min_total_token_count={self.min_tokens}"
            return httpx.Response(
                400, json={"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
            )
        name = f"cachedContents/sim{len(self.entries)}"
        expires = datetime.fromtimestamp(self.now + int(body["ttl"].removesuffix("s")), tz=UTC)
        wire = {"name": name, "displayName": body["displayName"], "model": body["model"],
                "expireTime": expires.isoformat().replace("+00:00", "Z"), "usageMetadata": {"totalTokenCount": tokens}}  # fmt: skip
        self.entries[name] = {"tokens": tokens, "wire": wire}
        return httpx.Response(200, json=wire)
