"""Gemini explicit context caching (``cachedContents``), used only where it pays.

Gemini 2.5 and later already serve repeated prefixes from an implicit cache at the cached price,
without storage cost and without asking; that is the default here. An explicit cache guarantees
the hit but is billed per token-hour of storage, so ``GeminiModel(context_cache=True)`` creates one
only for the part every call of an agent shares, the system instruction, tools and tool config,
and only when that prefix is above the model's minimum and seen a second time (reused) within the
process. All conversations of the agent then share the entry.

Durable-safe: creation happens in the model activity, keyed by a hash of the prefix (and model)
that is also the entry's ``displayName``. Before creating, the cache lists the project's entries
and reuses one with that name, so a retried activity or another worker does not create a second
(two workers racing can still both create one; each expires with its bounded TTL). A prefix the API
refuses to cache (a 4xx on create) is sent uncached from then on; other errors are the model
call's errors, and Temporal retries them.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from adk_core.errors import ModelError
from adk_core.runtime import wall_clock

from ._http import malformed_response

if TYPE_CHECKING:
    from .gemini import GeminiModel

logger = logging.getLogger("adk_core.models")

PREFIX_FIELDS = ("systemInstruction", "tools", "toolConfig")
"""What a request with ``cachedContent`` may not carry itself: it must come from the cache."""
_MAX_LIST_PAGES = 5
_MAX_TRACKED = 4096  # prefixes remembered per model: a bound on memory, not a cache policy
_EXPIRY_MARGIN = 30.0  # seconds: an entry this close to expiring could lapse before the call uses it


def min_cacheable_tokens(model: str) -> int:
    # Google's documented minimums for explicit caching: 4,096 tokens on Pro models, 1,024 on others.
    return 4096 if "-pro" in model else 1024


def estimate_tokens(value: Any) -> int:
    """A conservative count (5 characters a token), so a prefix judged big enough is."""
    return len(json.dumps(value, separators=(",", ":"))) // 5


@dataclass
class ContextCache:
    """One model's explicit cache entries, by prefix hash."""

    ttl_seconds: int
    _entries: dict[str, tuple[str, float]] = field(default_factory=dict)  # key -> (name, expires at)
    _seen: dict[str, int] = field(default_factory=dict)
    _refused: set[str] = field(default_factory=set)

    async def apply(self, model: GeminiModel, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """``body`` with its shared prefix replaced by a cache entry, where that pays; else ``body``."""
        prefix = {k: body[k] for k in PREFIX_FIELDS if k in body}
        if not prefix or estimate_tokens(prefix) < min_cacheable_tokens(model.name):
            return body
        key = hashlib.sha256(f"{model.name}\n{json.dumps(prefix, sort_keys=True)}".encode()).hexdigest()
        if key in self._refused:
            return body
        name = self._live(key)
        if name is None:
            if len(self._seen) >= _MAX_TRACKED:  # instructions that embed state make many prefixes
                self._seen.clear()
            self._seen[key] = self._seen.get(key, 0) + 1
            if self._seen[key] < 2:
                return body  # not reused yet: storage would cost more than it saves
            name = await self._find(model, key, headers) or await self._create(model, key, prefix, headers)
            if name is None:
                return body
        return {**{k: v for k, v in body.items() if k not in PREFIX_FIELDS}, "cachedContent": name}

    def _live(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None or entry[1] - _EXPIRY_MARGIN <= wall_clock():
            self._entries.pop(key, None)
            return None
        return entry[0]

    def _remember(self, key: str, wire: dict[str, Any]) -> str | None:
        name, expires = wire.get("name"), _timestamp(wire.get("expireTime"))
        if not isinstance(name, str) or expires is None or expires - _EXPIRY_MARGIN <= wall_clock():
            return None
        if len(self._entries) >= _MAX_TRACKED:
            self._entries = {k: e for k, e in self._entries.items() if e[1] > wall_clock()}
        self._entries[key] = (name, expires)
        return name

    async def _find(self, model: GeminiModel, key: str, headers: dict[str, str]) -> str | None:
        url, token = f"{model.api_root}/cachedContents?pageSize=100", None
        for _ in range(_MAX_LIST_PAGES):
            page = await model.get_json(url + (f"&pageToken={token}" if token else ""), headers)
            for wire in page.get("cachedContents") or []:
                if wire.get("displayName") == _display_name(key) and (name := self._remember(key, wire)):
                    return name
            if not (token := page.get("nextPageToken")):
                return None
        return None

    async def _create(
        self, model: GeminiModel, key: str, prefix: dict[str, Any], headers: dict[str, str]
    ) -> str | None:
        body = {
            "model": f"models/{model.name.removeprefix('models/')}",
            "displayName": _display_name(key),
            "ttl": f"{self.ttl_seconds}s",
            **prefix,
        }
        try:
            wire = await model.post_json(f"{model.api_root}/cachedContents", body, headers)
        except ModelError as e:
            if e.status is None or not 400 <= e.status < 500 or e.retryable:
                raise
            self._refused.add(key)
            logger.warning(
                "Gemini refused to cache the instruction and tools of model '%s' (%s); they are sent "
                "uncached from now on. Pass context_cache=False to GeminiModel to stop trying.", model.name, e,
            )  # fmt: skip
            return None
        if not isinstance(wire, dict):
            raise malformed_response(model.provider, "the created cachedContent is not a JSON object", None)
        return self._remember(key, wire)


def _display_name(key: str) -> str:
    return f"adk-{key[:48]}"


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
