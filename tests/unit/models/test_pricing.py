"""The model price table: cost per call, name matching, user files, turn totals."""

from __future__ import annotations

from pathlib import Path

import pytest

from adk_core.errors import ConfigurationError
from adk_core.models import UsageMetadata
from adk_core.models.pricing import COST_KEY, ModelPrice, PriceTable, turn_usage
from adk_core.types import Event


def test_cost_is_per_million_tokens_with_cached_and_thinking_tokens() -> None:
    price = ModelPrice(input=2.0, output=10.0, cached_input=0.5)
    usage = UsageMetadata(prompt_token_count=1000, cached_content_token_count=400, candidates_token_count=100,
                          thoughts_token_count=50)  # fmt: skip
    assert price.cost(usage) == pytest.approx((600 * 2.0 + 400 * 0.5 + 150 * 10.0) / 1e6)
    # Without a cached price, cached prompt tokens cost as input.
    assert ModelPrice(input=2.0, output=10.0).cost(usage) == pytest.approx((1000 * 2.0 + 150 * 10.0) / 1e6)


def test_cache_writes_cost_their_own_price_and_reads_theirs() -> None:
    # An Anthropic call: 100 plain input tokens, 2,000 written to the cache, 3,000 read from it.
    usage = UsageMetadata(prompt_token_count=5100, cached_content_token_count=3000, cache_creation_token_count=2000,
                          candidates_token_count=10)  # fmt: skip
    sonnet = PriceTable.default().price("claude-sonnet-4-5")
    assert sonnet == ModelPrice(input=3.0, output=15.0, cached_input=0.30, cache_write_input=3.75)
    assert sonnet.cost(usage) == pytest.approx((100 * 3.0 + 2000 * 3.75 + 3000 * 0.30 + 10 * 15.0) / 1e6)
    # Without a write price, written tokens cost as input.
    plain = ModelPrice(input=3.0, output=15.0, cached_input=0.30)
    assert plain.cost(usage) == pytest.approx((2100 * 3.0 + 3000 * 0.30 + 10 * 15.0) / 1e6)


def test_names_match_exactly_else_by_longest_prefix() -> None:
    table = PriceTable.default()
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini") != table.price("gpt-4o")
    assert table.price("models/gemini-2.5-flash") == table.price("gemini-2.5-flash")
    assert table.price("gemini-2.5-flash-lite-preview") == table.price("gemini-2.5-flash-lite")
    assert table.price("my-own-model") is None
    assert table.cost("my-own-model", UsageMetadata(prompt_token_count=5)) is None
    assert table.cost("gpt-4o", None) is None


def test_a_users_file_extends_and_overrides_the_defaults(tmp_path: Path) -> None:
    toml = tmp_path / "prices.toml"
    toml.write_text('[models."my-model"]\ninput = 1\noutput = 2\n\n[models."gpt-4o"]\ninput = 0\noutput = 0\n')
    table = PriceTable.default().merged(PriceTable.load(toml))
    assert table.price("my-model") == ModelPrice(input=1, output=2)
    assert table.cost("gpt-4o", UsageMetadata(prompt_token_count=10**6)) == 0
    assert table.price("claude-sonnet-4-20250514") == PriceTable.default().price("claude-sonnet-4")
    as_json = tmp_path / "prices.json"
    as_json.write_text('{"models": {"m": {"input": 3, "output": 4, "cached_input": 1}}}')
    assert PriceTable.load(as_json).price("m") == ModelPrice(input=3, output=4, cached_input=1)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[prices]\nx = 1\n", "no 'models' table"),
        ('[models."m"]\ninput = -1\noutput = 2\n', "price of model 'm' is invalid"),
        ('[models."m"]\ninput = 1\n', "price of model 'm' is invalid"),
        ("models = [", "not valid"),
    ],
)
def test_a_bad_file_says_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=says):
        PriceTable.load(path)
    with pytest.raises(ConfigurationError, match="cannot read"):
        PriceTable.load(tmp_path / "missing.toml")


def test_turn_usage_sums_the_events_usage_and_recorded_cost() -> None:
    events = [
        Event(author="user"),
        Event(author="a", usage_metadata={"prompt_token_count": 100, "candidates_token_count": 10},
              custom_metadata={COST_KEY: 0.25}),
        Event(author="a", partial=True, usage_metadata={"prompt_token_count": 999}),
        Event(author="a", usage_metadata={"prompt_token_count": 200, "candidates_token_count": 5, "thoughts_token_count": 5},
              custom_metadata={COST_KEY: 0.5}),
    ]  # fmt: skip
    usage = turn_usage(events)
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens, usage.cost_usd) == (2, 300, 20, 0.75)
    assert turn_usage([Event(author="a", usage_metadata={"prompt_token_count": 1})]).cost_usd is None
