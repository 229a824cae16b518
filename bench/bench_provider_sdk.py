"""Our httpx provider adapters vs the official SDKs with retries off: import time and per-call cost.

    python bench/bench_provider_sdk.py            # ~1 min; needs the test extra (anthropic, openai, google-genai)
    python bench/bench_provider_sdk.py --calls 500 --imports 5

Import time: a fresh interpreter that has already imported adk_core's model types (a worker always
has) imports one more module, measured in-process with perf_counter; the median of --imports runs.
Per call: one non-streamed and one streamed call answered by an httpx MockTransport with the recorded
payloads of tests/unit/models/payloads (no network), timed over --calls calls in 5 rounds, median
round reported as microseconds per call. Ours is the whole adapter (LlmRequest -> body -> HTTP ->
LlmResponse); the SDK is only its own client call (params -> HTTP -> its response object), a lower
bound for an adapter built on it, which would still convert our types to its params and back.
The SDKs (anthropic 2.x, openai 3.x, google-genai 3.x) are built on httpx2, so they get httpx2 clients.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
PAYLOADS = ROOT / "tests" / "unit" / "models" / "payloads"
KEY = "sk-bench"

IMPORTS = {
    "ours: adk_core.models.anthropic": "import adk_core.models.anthropic",
    "sdk: anthropic": "import anthropic",
    "ours: adk_core.models.openai": "import adk_core.models.openai",
    "sdk: openai": "import openai",
    "ours: adk_core.models.gemini": "import adk_core.models.gemini",
    "sdk: google.genai": "from google import genai",
}


def import_seconds(statement: str, runs: int) -> tuple[float, float]:
    """(wall, CPU) seconds to run ``statement``, each the median over ``runs`` fresh interpreters."""
    code = (
        "import time, adk_core.models.base, httpx, pydantic\n"
        f"t, c = time.perf_counter(), time.process_time()\n{statement}\n"
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    samples = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
        for _ in range(runs)
    ]
    return statistics.median(float(w) for w, _ in samples), statistics.median(float(c) for _, c in samples)


def transport(fixture: str, http: Any = httpx) -> Any:
    """An AsyncClient of ``http`` (httpx, or httpx2 for the SDKs built on it) answering with ``fixture``."""
    content = (PAYLOADS / fixture).read_bytes()
    kind = "text/event-stream" if fixture.endswith(".sse") else "application/json"

    def handle(request: Any) -> Any:
        return http.Response(200, headers={"content-type": kind}, content=content)

    return http.AsyncClient(transport=http.MockTransport(handle))


async def per_call_us(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(min(50, calls)):
        await call()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            await call()
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds)


async def drain(stream: Any) -> None:
    async for _ in stream:
        pass


def cases() -> dict[str, dict[str, Callable[[], Awaitable[Any]]]]:
    import anthropic
    import httpx2
    import openai
    from google import genai
    from google.genai import types as genai_types

    from adk_core.models import GenerateContentConfig, LlmRequest
    from adk_core.models.anthropic import AnthropicModel
    from adk_core.models.gemini import GeminiModel
    from adk_core.models.openai import OpenAIModel
    from adk_core.types import Content

    request = LlmRequest(
        contents=[Content.user("What is the capital of France?")],
        config=GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=256),
    )
    messages = [{"role": "user", "content": "What is the capital of France?"}]

    def ours(model: Any, stream: bool) -> Callable[[], Awaitable[Any]]:
        return lambda: drain(model.generate_content(request, stream=stream))

    claude = AnthropicModel("claude-opus-4-7", api_key=KEY, http_client=transport("anthropic_text.json"))
    claude_s = AnthropicModel("claude-opus-4-7", api_key=KEY, http_client=transport("anthropic_stream.sse"))
    a_sdk = anthropic.AsyncAnthropic(api_key=KEY, max_retries=0, http_client=transport("anthropic_text.json", httpx2))
    a_sdk_s = anthropic.AsyncAnthropic(api_key=KEY, max_retries=0, http_client=transport("anthropic_stream.sse", httpx2))

    async def a_stream() -> None:
        await drain(await a_sdk_s.messages.create(model="claude-opus-4-7", max_tokens=256, system="Be brief.", messages=messages, stream=True))  # type: ignore[arg-type]

    gpt = OpenAIModel("gpt-4o", api_key=KEY, http_client=transport("openai_text.json"))
    gpt_s = OpenAIModel("gpt-4o", api_key=KEY, http_client=transport("openai_stream.sse"))
    o_sdk = openai.AsyncOpenAI(api_key=KEY, max_retries=0, http_client=transport("openai_text.json", httpx2))
    o_sdk_s = openai.AsyncOpenAI(api_key=KEY, max_retries=0, http_client=transport("openai_stream.sse", httpx2))
    o_messages = [{"role": "system", "content": "Be brief."}, *messages]

    async def o_stream() -> None:
        await drain(await o_sdk_s.chat.completions.create(model="gpt-4o", messages=o_messages, max_completion_tokens=256, stream=True, stream_options={"include_usage": True}))  # type: ignore[arg-type,call-overload]

    gem = GeminiModel("gemini-2.5-flash", api_key=KEY, http_client=transport("gemini_text.json"))
    gem_s = GeminiModel("gemini-2.5-flash", api_key=KEY, http_client=transport("gemini_stream.sse"))
    config = genai_types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=256)

    def g_client(fixture: str) -> genai.Client:
        options = genai_types.HttpOptions(httpx_async_client=transport(fixture, httpx2), retry_options=genai_types.HttpRetryOptions(attempts=1))
        return genai.Client(api_key=KEY, http_options=options)

    g_sdk, g_sdk_s = g_client("gemini_text.json"), g_client("gemini_stream.sse")

    async def g_stream() -> None:
        await drain(await g_sdk_s.aio.models.generate_content_stream(model="gemini-2.5-flash", contents="What is the capital of France?", config=config))

    return {
        "anthropic": {
            "ours": ours(claude, False),
            "sdk": lambda: a_sdk.messages.create(model="claude-opus-4-7", max_tokens=256, system="Be brief.", messages=messages),  # type: ignore[arg-type]
            "ours stream": ours(claude_s, True),
            "sdk stream": a_stream,
        },
        "openai": {
            "ours": ours(gpt, False),
            "sdk": lambda: o_sdk.chat.completions.create(model="gpt-4o", messages=o_messages, max_completion_tokens=256),  # type: ignore[arg-type]
            "ours stream": ours(gpt_s, True),
            "sdk stream": o_stream,
        },
        "gemini": {
            "ours": ours(gem, False),
            "sdk": lambda: g_sdk.aio.models.generate_content(model="gemini-2.5-flash", contents="What is the capital of France?", config=config),
            "ours stream": ours(gem_s, True),
            "sdk stream": g_stream,
        },
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--imports", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    results: dict[str, Any] = {"imports_ms": {}, "per_call_us": {}, "cpus": os.cpu_count(), "loadavg": os.getloadavg()}
    print(f"import time, median of {args.imports} fresh interpreters (adk_core.models.base, httpx, pydantic already loaded)")
    for label, statement in IMPORTS.items():
        wall, cpu = import_seconds(statement, args.imports)
        results["imports_ms"][label] = {"wall": round(wall * 1000, 1), "cpu": round(cpu * 1000, 1)}
        print(f"  {label:36} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU")
    print(f"per call, MockTransport, median of 5 rounds x {args.calls} calls")
    for provider, calls in cases().items():
        row = {name: round(await per_call_us(call, args.calls)) for name, call in calls.items()}
        results["per_call_us"][provider] = row
        print(f"  {provider:10} " + "  ".join(f"{name} {us:6d} us" for name, us in row.items()))
    results["loadavg_after"] = os.getloadavg()
    print(json.dumps(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
