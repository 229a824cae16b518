"""Prompt caching: the share of a 20-turn conversation's input tokens served from the provider's cache.

    python bench/bench_caching.py          # ~5 s, no network; writes bench/results/caching.json

The conversation (tests/unit/models/cache_sim.py): a travel agent with a ~1,500-token instruction and
three tools, 20 user messages, 27 model calls (some turns call a tool), run by the in-process runner
through our real adapters. There are no API keys here, so the providers are SIMULATED: httpx
MockTransports that apply each provider's documented caching rules to the request bodies our
adapters send (Anthropic: cache_control breakpoints, 1,024-token minimum, 20-block lookback; OpenAI:
automatic, 1,024 tokens then 128-token steps; Gemini: explicit cachedContents only, its implicit
cache not played; tokens estimated as 4 characters each) and answer with
the usage the API would report. The figures show where our breakpoints land and that the reported
usage reaches events and cost; a real provider's hit rate also depends on its cache eviction.

Rows: Claude with caching on (the default) and off; OpenAI's automatic caching (always on); Gemini
with GeminiModel(context_cache=True), which caches the instruction and tools only. Cost is the price
table's (adk_core.models.pricing) for the conversation's total usage (Gemini's storage fee not included).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "unit" / "models"))

from cache_sim import SimulatedAnthropic, SimulatedGemini, SimulatedOpenAI, run_conversation  # noqa: E402

from adk_core.models import Model, PromptCacheConfig  # noqa: E402
from adk_core.models.anthropic import AnthropicModel  # noqa: E402
from adk_core.models.gemini import GeminiModel  # noqa: E402
from adk_core.models.openai import OpenAIModel  # noqa: E402
from adk_core.models.pricing import PriceTable  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "caching.json"


async def _row(name: str, model: Model) -> dict[str, Any]:
    usage = await run_conversation(model)
    return {
        "run": name,
        "model": model.name,
        "model_calls": usage.model_calls,
        "input_tokens": usage.prompt_tokens,
        "cached_input_tokens": usage.cached_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cached_share": round(usage.cached_share, 4),
        "cost_usd": round(PriceTable.default().cost(model.name, usage.as_usage()) or 0.0, 6),
    }


async def main() -> None:
    off = PromptCacheConfig(enabled=False)
    claude = "claude-sonnet-4-5"
    gemini = SimulatedGemini(now=time.time())
    rows = [
        await _row(
            "claude, caching on",
            AnthropicModel(claude, api_key="-", http_client=SimulatedAnthropic().client()),
        ),
        await _row(
            "claude, caching off",
            AnthropicModel(claude, api_key="-", http_client=SimulatedAnthropic().client(), prompt_cache=off),
        ),
        await _row(
            "gpt-4o, automatic", OpenAIModel("gpt-4o", api_key="-", http_client=SimulatedOpenAI().client())
        ),
        await _row(
            "gemini, explicit cache",
            GeminiModel("gemini-2.5-flash", api_key="-", http_client=gemini.client(), context_cache=True),
        ),
    ]
    print(f"{'run':<24}{'calls':>6}{'input':>9}{'cached':>9}{'written':>9}{'share':>8}{'cost $':>10}")
    for r in rows:
        print(
            f"{r['run']:<24}{r['model_calls']:>6}{r['input_tokens']:>9}{r['cached_input_tokens']:>9}"
            f"{r['cache_write_tokens']:>9}{r['cached_share']:>8.1%}{r['cost_usd']:>10.4f}"
        )
    result = {
        "what": "share of input tokens served from the provider's cache over a 20-turn conversation",
        "provider": "SIMULATED from the providers' documented caching rules (tests/unit/models/cache_sim.py)",
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
