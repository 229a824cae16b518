"""Calling user code that may be sync or async, and chaining callbacks (first non-None wins)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

Callbacks = Callable[..., Any] | Sequence[Callable[..., Any]] | None


async def call_maybe_async(fn: Callable[..., Any], /, **kwargs: Any) -> Any:
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def as_list(callbacks: Callbacks) -> list[Callable[..., Any]]:
    if callbacks is None:
        return []
    if callable(callbacks):
        return [callbacks]
    return list(callbacks)


async def first_result(callbacks: list[Callable[..., Any]], /, **kwargs: Any) -> Any:
    """Run callbacks in order; the first that returns something other than None wins."""
    for callback in callbacks:
        result = await call_maybe_async(callback, **kwargs)
        if result is not None:
            return result
    return None
