"""History by reference: the one place a model request's contents meet the session store.

A durable runtime stores its own session's events itself (``Runtime.stores_session``), so a model
call need not carry them: it can send a ContentsRef ("the contents of this session's stored events
through event X, as agent A on branch B sees them") and the model activity rebuilds those contents
from the store. Two references exist per request, both built here and nowhere else:

- the *cursor* reference (``request.history``): the stored events that are not loaded in the
  workflow at all (its session copy holds a recent tail). Always sent.
- the *stored prefix*: the loaded events too, through the newest one. The flow builds the contents
  of the loaded events once, by value, so callbacks and tools see and may edit them; the runtime
  swaps them for the reference when the model is called (``by_reference``), but only if that
  prefix is still exactly what was built.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..models.base import ContentsRef, LlmRequest
from ..types import Content

if TYPE_CHECKING:
    from ..agents.context import InvocationContext


@dataclasses.dataclass(frozen=True)
class StoredPrefix:
    """The leading ``contents`` of a request stand for the stored events ``ref`` points at."""

    ref: ContentsRef
    contents: list[Content]


def reference(ctx: InvocationContext, agent_name: str, through_event_id: str, *, current_turn_only: bool) -> ContentsRef:
    """The contents of ctx's session's stored events through ``through_event_id``, as ``agent_name``
    on ctx's branch sees them."""
    return ContentsRef(
        app_name=ctx.app_name,
        user_id=ctx.user_id,
        session_id=ctx.session.id,
        through_event_id=through_event_id,
        agent_name=agent_name,
        branch=ctx.branch,
        current_turn_only=current_turn_only,
    )


def mark_stored_prefix(request: LlmRequest, ref: ContentsRef, contents: list[Content]) -> None:
    """Record that ``request.contents`` starts with ``contents``, which ``ref`` stands for."""
    request._stored_prefix = StoredPrefix(ref=ref, contents=list(contents))


def by_reference(request: LlmRequest) -> LlmRequest:
    """``request`` with its stored prefix replaced by the reference, when the prefix is unchanged.

    Callbacks and tools may have edited the contents: anything but an untouched prefix (extra
    contents after it are fine) is sent by value, as it is. The comparison is by identity first
    (list equality), so an untouched prefix costs one pointer check per content.
    """
    prefix = request._stored_prefix
    if not isinstance(prefix, StoredPrefix):
        return request
    n = len(prefix.contents)
    if request.contents[:n] != prefix.contents:
        return request
    return request.model_copy(update={"history": prefix.ref, "contents": request.contents[n:]})


__all__ = ["StoredPrefix", "by_reference", "mark_stored_prefix", "reference"]
