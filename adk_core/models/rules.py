"""Per-model parameter rules, kept as data: which generation settings a model family accepts.

Providers move faster than agents are edited: Claude dropped ``temperature`` at Opus 4.7 (the API
answers 400 "temperature is deprecated for this model"), OpenAI's reasoning models take only the
default temperature and cap output with ``max_completion_tokens``. Every adapter applies these rules
to a request before building its body: a setting the model refuses is left out, with one warning per
(model, setting) in the process; ``App(strict_model_parameters=True)`` refuses such an agent when it
is loaded instead (adk_core.app.check_model_parameters).

Rows are matched in order (yours first, see ``register_model_rules``) against the model name and
against its last ``/`` segment, so ``openai/gpt-5`` behind a compatible server gets gpt-5's rules.
A name no row matches gets its provider's defaults (everything the adapter can send).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConfigurationError
from ._convert import tool_choice
from .base import GenerateContentConfig

__all__ = [
    "SETTINGS",
    "TOOL_CHOICES",
    "ModelRules",
    "Refusal",
    "apply_model_rules",
    "builtin_model_rules",
    "model_rules",
    "refused_settings",
    "register_model_rules",
]

logger = logging.getLogger("adk_core.models")

SETTINGS = frozenset({"temperature", "top_p", "top_k", "seed", "stop_sequences"})
"""The optional generation settings (GenerateContentConfig fields) a rule may refuse."""
TOOL_CHOICES = frozenset({"auto", "none", "any", "tool"})
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Effort levels, least first, as the providers name them."""
"""Tool-choice modes: ``any`` is "call some tool", ``tool`` is "call this named tool"."""

_HOW_TO_FIX = (
    "remove it from the agent's generate_content_config, or, if the model does accept it, "
    "add a row with adk_core.models.register_model_rules(ModelRules(...))"
)


@dataclass(frozen=True)
class ModelRules:
    """What one model family accepts.

    Attributes:
        pattern: a regular expression matched in full against the model name, or its last ``/`` segment.
        accepts: the optional settings (of ``SETTINGS``) the family takes; the others are left out.
        one_of: settings of which at most one may be sent; the first one set, in this order, is kept.
        token_limit_field: the body field for ``max_output_tokens`` where a provider has several
            (OpenAI: ``max_tokens`` or ``max_completion_tokens``); None means the provider's default.
        tool_choice: the tool-choice modes (of ``TOOL_CHOICES``) the family takes; another choice is
            left out, so the model decides (``auto``).
        structured_output: whether ``response_schema`` / JSON mode may be sent.
        json_mode: whether JSON mode without a schema (``response_mime_type="application/json"``)
            may be sent; Anthropic's API has none.
        thinking: how the family takes ``config.thinking``: ``budget`` (a token budget), ``adaptive``
            (Anthropic's adaptive thinking with an effort), ``effort`` (OpenAI's reasoning_effort),
            ``level`` (Gemini 3's thinkingLevel), ``none`` (the family does not think: refused);
            None means the provider's.
        thinking_excludes: settings left out while thinking is on (``tool_choice`` meaning a forced
            choice); None means the provider's.
        efforts: the effort levels the family takes (of none, minimal, low, medium, high, xhigh, max);
            another is sent as the nearest of these. None: every level.
        thinking_budgets: the least and the most thinking budget the family takes while it thinks
            (Gemini 2.5's thinkingBudget); a budget outside is sent as the nearer end. None: any.
        thinking_off: whether thinking can be turned off; where it cannot (Gemini 2.5 Pro), a
            request to turn it off is sent as the least budget, with the warning.
        reason: why, in a few words, repeated in the warning.
    """

    pattern: str
    accepts: frozenset[str] = SETTINGS
    one_of: tuple[str, ...] = ()
    token_limit_field: str | None = None
    tool_choice: frozenset[str] = TOOL_CHOICES
    structured_output: bool = True
    json_mode: bool = True
    thinking: Literal["budget", "adaptive", "effort", "level", "none"] | None = None
    thinking_excludes: frozenset[str] | None = None
    efforts: tuple[str, ...] | None = None
    thinking_budgets: tuple[int, int] | None = None
    thinking_off: bool = True
    reason: str = ""
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = (self.accepts | set(self.one_of) | (self.thinking_excludes or frozenset())) - SETTINGS
        unknown -= (
            {"tool_choice"} if self.thinking_excludes and "tool_choice" in self.thinking_excludes else set()
        )
        unknown |= self.tool_choice - TOOL_CHOICES
        unknown |= set(self.efforts or ()) - set(EFFORTS)
        if unknown:
            raise ConfigurationError(
                f"ModelRules({self.pattern!r}): unknown settings {sorted(unknown)}; settings are {sorted(SETTINGS)} "
                f"(and tool_choice in thinking_excludes), tool choices {sorted(TOOL_CHOICES)}"
            )
        budgets = self.thinking_budgets
        if budgets is not None and not 0 < budgets[0] <= budgets[1]:
            raise ConfigurationError(
                f"ModelRules({self.pattern!r}): thinking_budgets {budgets} is not (least, most) above 0"
            )
        object.__setattr__(self, "_compiled", re.compile(self.pattern))

    def matches(self, model: str) -> bool:
        return bool(self._compiled.fullmatch(model) or self._compiled.fullmatch(model.rsplit("/", 1)[-1]))


_SAMPLING_REMOVED = (
    "Anthropic removed temperature, top_p and top_k at Claude Opus 4.7; the API answers 400 "
    "'temperature is deprecated for this model'"
)
_OPENAI_REASONING = (
    "OpenAI's reasoning models accept only the default temperature and top_p, and no stop sequences"
)
_BUILTIN: tuple[ModelRules, ...] = (
    # Anthropic. Opus 4.7, 4.8 and every Claude 5 model: no sampling parameters at all.
    ModelRules(
        r"claude-(opus-4-[7-9]|(opus|sonnet|haiku)-([5-9]|[1-9][0-9])|fable|mythos)([-.].*)?",
        accepts=frozenset({"stop_sequences"}),
        thinking="adaptive",
        reason=_SAMPLING_REMOVED,
    ),
    # Before Opus 4.1 / Sonnet 4.5 / Haiku 4.5: no structured outputs (output_config.format is a 400).
    ModelRules(
        r"claude-(3-.*|(opus|sonnet)-4(-0)?(-[0-9]{8}|-latest)?)",
        accepts=frozenset({"temperature", "top_p", "top_k", "stop_sequences"}),
        structured_output=False,
        reason="structured outputs start at Claude Opus 4.1, Sonnet 4.5 and Haiku 4.5",
    ),
    # The 4.1 / 4.5 / 4.6 generation: temperature or top_p, never both (400 otherwise).
    ModelRules(
        r"claude-(opus-4-[156]|sonnet-4-[56]|haiku-4-5)([-.].*)?",
        accepts=frozenset({"temperature", "top_p", "top_k", "stop_sequences"}),
        one_of=("temperature", "top_p"),
        reason="Claude 4.1 and later answer 400 'temperature and top_p cannot both be specified'",
    ),
    # OpenAI. The chat variants of gpt-5 are not reasoning models and sample as gpt-4o does.
    ModelRules(
        r"gpt-5(\.[0-9]+)?-chat.*",
        accepts=frozenset({"temperature", "top_p", "seed", "stop_sequences"}),
        token_limit_field="max_completion_tokens",
        thinking="none",
    ),
    # Each reasoning generation names its efforts differently; another value is a 400.
    ModelRules(
        r"gpt-5\.1([-.].*)?",
        accepts=frozenset({"seed"}),
        token_limit_field="max_completion_tokens",
        thinking="effort",
        efforts=("none", "low", "medium", "high"),
        reason=_OPENAI_REASONING,
    ),
    ModelRules(
        r"gpt-5\.([2-9]|[1-9][0-9])([-.].*)?",
        accepts=frozenset({"seed"}),
        token_limit_field="max_completion_tokens",
        thinking="effort",
        efforts=("none", "low", "medium", "high", "xhigh"),
        reason=_OPENAI_REASONING,
    ),
    ModelRules(
        r"gpt-5.*",
        accepts=frozenset({"seed"}),
        token_limit_field="max_completion_tokens",
        thinking="effort",
        efforts=("minimal", "low", "medium", "high"),
        reason=_OPENAI_REASONING,
    ),
    ModelRules(
        r"(o[1-9]|codex-).*",
        accepts=frozenset({"seed"}),
        token_limit_field="max_completion_tokens",
        thinking="effort",
        efforts=("low", "medium", "high"),
        reason=_OPENAI_REASONING,
    ),
    # OpenAI's open-weight models, served by vLLM, Ollama and others as "openai/gpt-oss-20b" or
    # "gpt-oss:20b": sampling as usual, reasoning_effort low to high.
    ModelRules(
        r"gpt-oss.*",
        accepts=frozenset({"temperature", "top_p", "seed", "stop_sequences"}),
        thinking="effort",
        efforts=("low", "medium", "high"),
    ),
    # Gemini 2.5: each model takes budgets in a range of its own (ai.google.dev/gemini-api/docs/thinking),
    # and Pro cannot stop thinking (a budget of 0 is a 400). Flash-Lite first: the Flash row matches it too.
    ModelRules(
        r"gemini-2\.5-pro([-.].*)?",
        thinking_budgets=(128, 32768),
        thinking_off=False,
        reason=(
            "Gemini 2.5 Pro cannot turn thinking off; "
            "the API answers 400 'This model only works in thinking mode'"
        ),
    ),
    ModelRules(r"gemini-2\.5-flash-lite([-.].*)?", thinking_budgets=(512, 24576)),
    ModelRules(r"gemini-2\.5-flash([-.].*)?", thinking_budgets=(1, 24576)),
    # Gemini 3 sets thinking by level rather than by budget; Pro takes only two levels.
    ModelRules(
        r"gemini-([3-9]|[1-9][0-9])(\.[0-9]+)?-pro([-.].*)?", thinking="level", efforts=("low", "high")
    ),
    ModelRules(
        r"gemini-([3-9]|[1-9][0-9])([-.].*)?", thinking="level", efforts=("minimal", "low", "medium", "high")
    ),
)

_DOTTED_VERSION = re.compile(r"(?<=[0-9])\.(?=[0-9])")
_user_rules: list[ModelRules] = []
_warned: set[tuple[str, str]] = set()


def register_model_rules(*rules: ModelRules) -> None:
    """Add rows ahead of the built-in ones (later calls win over earlier ones).

    Register before building the App when it is strict, since the check runs as it is built.
    """
    for rule in rules:
        _user_rules.insert(0, rule)


def builtin_model_rules() -> tuple[ModelRules, ...]:
    """The built-in rows, in the order they are tried (docs/models.md lists them)."""
    return _BUILTIN


def model_rules(model: str) -> ModelRules | None:
    """The first row matching ``model``, or None when its provider's defaults apply.

    A name no row matches is tried once more with dotted versions hyphenated, as OpenRouter spells
    them: ``anthropic/claude-opus-4.7`` gets the row of ``claude-opus-4-7``.
    """
    for name in dict.fromkeys((model, _DOTTED_VERSION.sub("-", model))):
        for rule in (*_user_rules, *_BUILTIN):
            if rule.matches(name):
                return rule
    return None


@dataclass(frozen=True)
class Refusal:
    """One setting a request carries that the model (or its provider's API) does not take."""

    setting: str
    reason: str
    replacement: Any = None
    """What is sent instead of the setting; None leaves it out."""


def refused_settings(config: GenerateContentConfig, rules: ModelRules, provider: ModelRules) -> list[Refusal]:
    """The settings of ``config`` to leave out for a model with ``rules`` behind ``provider``'s API.

    ``provider`` holds what the adapter can send at all (a setting the API has no field for, such as
    Anthropic's missing ``seed``, is refused too rather than silently dropped).
    """
    refusals: list[Refusal] = []
    for setting in sorted(SETTINGS):
        if getattr(config, setting) is None:
            continue
        if setting not in provider.accepts:
            refusals.append(Refusal(setting, f"{provider.reason} has no {setting} setting"))
        elif setting not in rules.accepts:
            refusals.append(Refusal(setting, rules.reason or "the model does not take it"))
    kept = [
        s for s in rules.one_of if getattr(config, s) is not None and s not in {r.setting for r in refusals}
    ]
    for extra in kept[1:]:
        refusals.append(
            Refusal(
                extra,
                f"{rules.reason or 'it takes only one of ' + ', '.join(rules.one_of)}; {kept[0]} was kept",
            )
        )
    choice = mode[0] if (mode := tool_choice(config)) else None
    if (
        choice is not None
        and config.tools
        and (choice not in rules.tool_choice or choice not in provider.tool_choice)
    ):
        refusals.append(
            Refusal("tool_choice", f"{choice!r} tool choice is not supported; the model decides instead")
        )
    style = rules.thinking or provider.thinking
    thinking = config.thinking
    if thinking is not None and style in (None, "none"):
        refusals.append(Refusal("thinking", "the model has no thinking or reasoning setting"))
        thinking = None
    elif thinking is not None and thinking.off and not rules.thinking_off:
        # Leaving thinking out would let the model think as much as it likes: ask for the least.
        least = rules.thinking_budgets[0] if rules.thinking_budgets else 1
        thinking = thinking.model_copy(update={"effort": None, "budget_tokens": least})
        reason = rules.reason or "it cannot turn thinking off"
        reason = f"{reason}; the least budget it takes, {least} tokens, is sent instead"
        refusals.append(Refusal("thinking", reason, thinking))
    if thinking is not None and not thinking.off:
        excludes = (
            rules.thinking_excludes if rules.thinking_excludes is not None else provider.thinking_excludes
        )
        refused = {r.setting for r in refusals}
        for setting in sorted(excludes or ()):
            forced = setting == "tool_choice" and choice in ("any", "tool") and bool(config.tools)
            if setting not in refused and (
                forced or (setting in SETTINGS and getattr(config, setting) is not None)
            ):
                refusals.append(Refusal(setting, "the API does not allow it while thinking is on"))
    if config.response_schema is not None or config.response_mime_type == "application/json":
        if not (rules.structured_output and provider.structured_output):
            setting = "response_schema" if config.response_schema is not None else "response_mime_type"
            reason = rules.reason if not rules.structured_output and rules.reason else ""
            refusals.append(Refusal(setting, reason or "the model does not take a response schema or JSON mode"))
        elif config.response_schema is None and not (rules.json_mode and provider.json_mode):
            refusals.append(
                Refusal("response_mime_type", "there is no JSON mode without a schema; give a response_schema")
            )
    return refusals


def apply_model_rules(
    model: str, config: GenerateContentConfig, provider: ModelRules, rules: ModelRules | None = None
) -> tuple[GenerateContentConfig, ModelRules]:
    """``config`` without the settings ``model`` refuses (warned about once each), and the rules used.

    Args:
        model: the model name, as the table matches it.
        config: the request's settings; not modified.
        provider: the adapter's own row: what its API can carry and its defaults.
        rules: a row given to the model instance, used instead of the table.
    """
    rules = rules or model_rules(model) or provider
    refusals = refused_settings(config, rules, provider)
    if not refusals:
        return config, rules
    cleared: dict[str, Any] = {}
    for refusal in refusals:
        cleared[refusal.setting] = refusal.replacement
        if refusal.setting == "response_schema":
            cleared["response_mime_type"] = None
        key = (model, refusal.setting)
        if key not in _warned:
            _warned.add(key)
            changed = refusal.replacement is not None
            logger.warning(
                "model '%s' does not accept '%s'%s (%s), so it was %s; %s. "
                "This is said once per model and setting.",
                model, refusal.setting, " as set" if changed else "", refusal.reason,
                "changed" if changed else "left out of the request", _HOW_TO_FIX,
            )  # fmt: skip
    return config.model_copy(update=cleared), rules


def describe_refusals(model: str, refusals: list[Refusal]) -> str:
    """One line naming what ``model`` refuses and why, for errors raised at load time."""
    listed = "; ".join(f"{r.setting} ({r.reason})" for r in refusals)
    return f"model {model!r} does not accept {listed}"


def how_to_fix() -> str:
    return _HOW_TO_FIX


def reset_for_tests() -> None:
    """Forget user rows and which warnings were given (tests only)."""
    _user_rules.clear()
    _warned.clear()
