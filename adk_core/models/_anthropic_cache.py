"""Anthropic prompt caching: where a Messages request gets its ``cache_control`` breakpoints.

Anthropic caches only up to a marked block and reads a cached prefix only when a later request
marks the same prefix again (or a block at most 20 blocks after it). The request's order is tools,
system, messages, so the breakpoints go, at most four as the API allows, on:

1. the last tool: the tool list alone stays cached while the instruction changes (state in it);
2. the system instruction: tools and instruction, the part every turn shares;
3. the previous request's tail (the message two before the last one, since roles alternate): the
   prefix the last call wrote, read back whole however many blocks this turn added;
4. the tail, the last message: written now, read by the next call (a moving breakpoint).

A prefix below the model's minimum (1,024 tokens for most models) is simply not cached; marking it
costs nothing.
"""

from __future__ import annotations

from typing import Any

from .base import PromptCacheConfig

_MAX_BREAKPOINTS = 4
# Thinking blocks cannot carry cache_control; they are cached as part of the prefix around them.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def cache_control(cache: PromptCacheConfig) -> dict[str, Any]:
    return {"type": "ephemeral", "ttl": cache.ttl} if cache.ttl else {"type": "ephemeral"}


def mark_breakpoints(body: dict[str, Any], cache: PromptCacheConfig) -> int:
    """Add ``cache_control`` to ``body`` (a Messages request, changed in place); returns how many."""
    marker = cache_control(cache)
    marked = 0
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = marker
        marked += 1
    if isinstance(system := body.get("system"), str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": marker}]
        marked += 1
    messages = body.get("messages") or []
    # The tail first: with fewer breakpoints to spare, it is the one every next call reads.
    for index in (len(messages) - 1, len(messages) - 3):
        if marked >= _MAX_BREAKPOINTS or index < 0:
            break
        block = _last_markable(messages[index]["content"])
        if block is not None:
            block["cache_control"] = marker
            marked += 1
    return marked


def _last_markable(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((block for block in reversed(blocks) if block.get("type") not in _UNMARKABLE), None)
