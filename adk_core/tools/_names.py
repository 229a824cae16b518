"""Tool names every model provider accepts (OpenAI and Gemini refuse dots, slashes and spaces)."""

from __future__ import annotations

import re

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]+")


def provider_safe_name(text: str) -> str:
    """``text`` with each run of other characters as ``_``, at most 64 characters."""
    name = _NOT_ALLOWED.sub("_", text).strip("_")
    return (name or "tool")[:64]
