"""What model calls cost: a price table per model, kept as data and extended by the user.

    prices = PriceTable.default().merged(PriceTable.load("prices.toml"))
    prices.cost("gemini-2.5-flash", usage)            # USD, or None for a model not in the table

A file (TOML or JSON) maps model names to USD per million tokens::

    [models."gemini-2.5-flash"]
    input = 0.30
    output = 2.50
    cached_input = 0.075     # optional: cached prompt tokens, when the provider reports them
    cache_write_input = 0.375  # optional: prompt tokens written to the cache (Anthropic), when reported

A model name matches its own entry, else the longest entry it starts with ("gpt-4o-mini-2024-07-18"
takes "gpt-4o-mini"). The defaults are list prices for short prompts as published by the providers
(``DEFAULT_PRICES_AS_OF``); they change, and tiers, batch rates and discounts are not modelled, so
a deployment that reports cost should keep its own file. Durable workers record each model call's
cost on its event (``custom_metadata["adk_cost_usd"]``) and in the metrics (docs/observability.md).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigurationError
from .base import UsageMetadata

__all__ = ["COST_KEY", "DEFAULT_PRICES_AS_OF", "ModelPrice", "PriceTable", "TurnUsage", "turn_usage"]

COST_KEY = "adk_cost_usd"
"""The key of a model response event's ``custom_metadata`` that holds the call's cost in USD."""

DEFAULT_PRICES_AS_OF = "2025-06"

_PER_MILLION = 1_000_000


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    """For prompt tokens the provider served from its cache; None: charged as ``input``."""
    cache_write_input: float | None = Field(default=None, ge=0)
    """For prompt tokens written to the provider's cache (Anthropic: 1.25 times ``input`` for a
    5 minute entry, twice for a 1 hour one); None: charged as ``input``."""

    def cost(self, usage: UsageMetadata) -> float:
        prompt = usage.prompt_token_count or 0
        cached = min(usage.cached_content_token_count or 0, prompt) if self.cached_input is not None else 0
        written = 0
        if self.cache_write_input is not None:
            written = min(usage.cache_creation_token_count or 0, prompt - cached)
        # Thinking tokens are billed as output by every provider that reports them apart.
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        total = (
            (prompt - cached - written) * self.input
            + cached * (self.cached_input or 0.0)
            + written * (self.cache_write_input or 0.0)
            + output * self.output
        )
        return total / _PER_MILLION


_DEFAULTS: dict[str, ModelPrice] = {
    # Google (ai.google.dev/pricing), prompts up to 200k tokens
    "gemini-2.5-pro": ModelPrice(input=1.25, output=10.0, cached_input=0.31),
    "gemini-2.5-flash": ModelPrice(input=0.30, output=2.50, cached_input=0.075),
    "gemini-2.5-flash-lite": ModelPrice(input=0.10, output=0.40, cached_input=0.025),
    "gemini-2.0-flash": ModelPrice(input=0.10, output=0.40, cached_input=0.025),
    "gemini-2.0-flash-lite": ModelPrice(input=0.075, output=0.30),
    # OpenAI (openai.com/api/pricing)
    "gpt-4o": ModelPrice(input=2.50, output=10.0, cached_input=1.25),
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.60, cached_input=0.075),
    "gpt-4.1": ModelPrice(input=2.0, output=8.0, cached_input=0.50),
    "gpt-4.1-mini": ModelPrice(input=0.40, output=1.60, cached_input=0.10),
    "gpt-4.1-nano": ModelPrice(input=0.10, output=0.40, cached_input=0.025),
    "o3": ModelPrice(input=2.0, output=8.0, cached_input=0.50),
    "o4-mini": ModelPrice(input=1.10, output=4.40, cached_input=0.275),
    # Anthropic (anthropic.com/pricing); cached = cache reads, cache writes at the 5 minute rate
    "claude-opus-4": ModelPrice(input=15.0, output=75.0, cached_input=1.50, cache_write_input=18.75),
    "claude-sonnet-4": ModelPrice(input=3.0, output=15.0, cached_input=0.30, cache_write_input=3.75),
    "claude-3-7-sonnet": ModelPrice(input=3.0, output=15.0, cached_input=0.30, cache_write_input=3.75),
    "claude-3-5-haiku": ModelPrice(input=0.80, output=4.0, cached_input=0.08, cache_write_input=1.0),
}


class PriceTable:
    """Prices by model name; see the module docstring for matching and the file format."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices: dict[str, ModelPrice] = dict(prices or {})
        # Longest first, so "gpt-4o-mini-..." finds "gpt-4o-mini" before "gpt-4o".
        self._prefixes = sorted(self.prices, key=len, reverse=True)

    @classmethod
    def default(cls) -> PriceTable:
        return cls(_DEFAULTS)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, source: str = "the price table") -> PriceTable:
        """From ``{"models": {name: {"input": .., "output": .., "cached_input": ..}}}`` (a file's contents;
        ``cache_write_input`` too)."""
        models = data.get("models")
        if not isinstance(models, Mapping):
            raise ConfigurationError(
                f"{source} has no 'models' table; write [models.\"<model name>\"] with input and output "
                "(USD per million tokens)"
            )
        prices = {}
        for name, entry in models.items():
            try:
                prices[str(name)] = ModelPrice.model_validate(entry)
            except ValidationError as e:
                raise ConfigurationError(
                    f"{source}: the price of model {name!r} is invalid ({e.errors()[0]['msg']}); give input and "
                    "output (and optionally cached_input, cache_write_input) as USD per million tokens"
                ) from None
        return cls(prices)

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a TOML or JSON file (by its suffix; TOML otherwise)."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ConfigurationError(f"cannot read the price table {str(path)!r}: {e.strerror}") from None
        try:
            data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as e:
            raise ConfigurationError(f"the price table {str(path)!r} is not valid {path.suffix or 'TOML'}: {e}") from None
        return cls.from_data(data, source=f"the price table {str(path)!r}")

    def merged(self, other: PriceTable) -> PriceTable:
        """This table with ``other``'s entries added or replacing ours."""
        return PriceTable({**self.prices, **other.prices})

    def price(self, model: str) -> ModelPrice | None:
        if model in self.prices:
            return self.prices[model]
        name = model.rsplit("/", 1)[-1]  # "models/gemini-2.5-flash", "openrouter/x/gpt-4o"
        return next((self.prices[p] for p in self._prefixes if name.startswith(p)), None)

    def cost(self, model: str, usage: UsageMetadata | None) -> float | None:
        """USD for one call's ``usage``; None when the model has no price or the call no usage."""
        price = self.price(model)
        if price is None or usage is None:
            return None
        return price.cost(usage)


class TurnUsage(BaseModel):
    """A turn's (or any run of events') model usage and cost."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """None when no call had a price."""


def turn_usage(events: Iterable[Any]) -> TurnUsage:
    """Sum the usage and recorded cost of ``events`` (adk_core Events; partial ones are skipped)."""
    total = TurnUsage()
    for event in events:
        usage = getattr(event, "usage_metadata", None)
        if not usage or getattr(event, "partial", False):
            continue
        total.model_calls += 1
        total.input_tokens += usage.get("prompt_token_count") or 0
        total.output_tokens += (usage.get("candidates_token_count") or 0) + (usage.get("thoughts_token_count") or 0)
        cost = (getattr(event, "custom_metadata", None) or {}).get(COST_KEY)
        if isinstance(cost, int | float):
            total.cost_usd = (total.cost_usd or 0.0) + float(cost)
    return total
