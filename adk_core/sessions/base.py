"""Session and the SessionService contract every backend implements."""

from __future__ import annotations

import abc
import copy
import json
import math
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError, SchemaSerializer

from ..errors import EventConflictError, InvalidInputError, UnsupportedOperationError
from ..flow.contents import without_compacted
from ..ids import validate_id
from ..state import TEMP_PREFIX, validate_state_delta, without_temp
from ..types import Event


class Session(BaseModel):
    """One conversation: its events and the merged state (session + app: + user: keys)."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    last_update_time: float = 0.0


class GetSessionConfig(BaseModel):
    """Which events ``get_session`` loads. Unset fields load everything; the filters combine, and
    ``num_recent_events`` applies last (the last N of what the others let through)."""

    num_recent_events: int | None = None
    """Only the last N events; 0 loads none (state only). Negative is refused."""
    after_timestamp: float | None = None
    """Only events with a timestamp at or after this (inclusive, as in google-adk)."""
    through_event_id: str | None = None
    """Only events up to and including this one (a cursor into the log)."""
    after_event_id: str | None = None
    """Only events after this one (exclusive); nothing when it is not stored."""
    skip_compacted: bool = False
    """Leave out the events the newest compaction hides from the model and no one else needs
    (``adk_core.flow.contents.without_compacted``): the contents built from the rest, and the next
    compaction planned from them, are those of all the events. A long compacted session then reads
    in time that does not grow with it. Combines with ``through_event_id`` only (applied after it)."""


class ListSessionsResponse(BaseModel):
    sessions: list[Session] = Field(default_factory=list)


class SessionService(abc.ABC):
    """Stores sessions, their events and app/user state.

    Contract (one test suite checks it for every backend):
      - every app name, user id and session id given is checked by ``adk_core.ids.validate_id``
        (InvalidInputError), never stripped; ``create_session`` makes an id only when given None;
      - partial events are returned, not stored;
      - ``temp:`` keys are applied to the live session object for the invocation, never stored;
      - ``app:`` keys are shared across the app, ``user:`` keys across a user's sessions;
      - appending an event id that is already stored with the same content changes nothing and
        succeeds (a retry); with different content it raises EventConflictError and writes nothing;
      - concurrent appends to one session lose nothing.
    """

    @abc.abstractmethod
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session; raises AlreadyExistsError when ``session_id`` is taken."""

    @abc.abstractmethod
    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        """The session with merged state and the events ``config`` selects, or None."""

    @abc.abstractmethod
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """Sessions of the app (optionally one user), with state but without events, ordered by
        ``last_update_time`` oldest first (ties by user id, then session id): the last one is the
        most recently active, as in google-adk."""

    @abc.abstractmethod
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session and its events. Deleting a missing session is not an error."""

    async def delete_user(self, *, app_name: str, user_id: str) -> None:
        """Delete every session of ``user_id`` in ``app_name`` with its events, and the user's ``user:``
        state. Deleting a user with nothing stored is not an error.

        Stores that cannot (a durable run's session service) raise UnsupportedOperationError."""
        raise UnsupportedOperationError(
            f"delete_user is not available on {type(self).__name__}; call it on the store itself "
            "(InMemorySessionService, DatabaseSessionService) or use `adkt users delete`"
        )

    @abc.abstractmethod
    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` and apply it to ``session`` (the caller's copy).

        A caller holding an old copy of the session still appends successfully: deltas are merged
        in the store, never overwritten wholesale; the copy gains this event and its own delta
        only. Call ``get_session`` again to see what other writers added.
        """

    async def append_events(self, session: Session, events: list[Event]) -> list[Event]:
        """Append several events in order, all or nothing: every event is checked before any is
        written. Backends override this to store them in one transaction."""
        for event in events:
            prepare_event_for_storage(event)
        return [await self.append_event(session, event) for event in events]

    @abc.abstractmethod
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The ``user:`` state of one user, keys without the prefix."""

    async def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        """The ``app:`` state, keys without the prefix."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} does not expose app state; read app: keys from session.state, "
            "where every session of the app sees them"
        )


def new_session_id(app_name: str, user_id: str, session_id: str | None, make_id: Callable[[], str]) -> str:
    """The id a new session gets: ``session_id`` as given, or ``make_id()`` when it is None.

    All three ids are checked; a padded or empty ``session_id`` is refused, not stripped or replaced,
    so the id the caller created with is the id that reads and deletes the session.
    """
    validate_id("app name", app_name)
    validate_id("user id", user_id)
    return make_id() if session_id is None else validate_id("session id", session_id)


def check_list_ids(app_name: str, user_id: str | None) -> None:
    """``list_sessions`` ids: the app always, the user when one is given."""
    validate_id("app name", app_name)
    if user_id is not None:
        validate_id("user id", user_id)


def check_get_session_config(config: GetSessionConfig | None) -> None:
    """Refuse what no store can select. A negative ``num_recent_events`` meant something different
    in each google-adk backend (a slice from the start, or an SQL error), so it is an error here."""
    if config is not None and config.skip_compacted and (
        config.num_recent_events is not None or config.after_timestamp is not None or config.after_event_id is not None
    ):
        raise InvalidInputError(
            "GetSessionConfig.skip_compacted combines with through_event_id only: what a compaction hides is "
            "judged over the session from its start; drop num_recent_events, after_timestamp and after_event_id"
        )
    if config is not None and config.num_recent_events is not None and config.num_recent_events < 0:
        raise InvalidInputError(
            f"GetSessionConfig.num_recent_events is {config.num_recent_events}; give 0 or more "
            "(0 loads the session without events, None loads them all)"
        )


def prepare_event_for_storage(event: Event) -> Event | None:
    """Validate an event's delta and drop what must never be stored. None means: do not store it."""
    if event.partial:
        return None
    delta = event.actions.state_delta
    if delta:
        validate_state_delta(delta)
    # Typed float fields: JSON writes a NaN or Infinity there as null (model_json catches the rest),
    # and an event stored so would not read back.
    compaction = event.actions.compaction
    times = [event.timestamp]
    if compaction is not None:
        times += [compaction.start_timestamp, compaction.end_timestamp]
    if not all(map(math.isfinite, times)):
        raise InvalidInputError(
            f"event {event.id!r} has a NaN or infinite timestamp (or compaction range), which JSON "
            "cannot hold; give seconds since the epoch. Nothing was written"
        )
    return event


def apply_event_to_session(session: Session, event: Event) -> None:
    """Apply a stored event to a live session copy: append it, apply its state delta (temp: included).

    temp: keys are removed from the event's delta afterwards so the event the caller sees is the
    one that was stored; the values stay readable in ``session.state`` until the invocation ends.
    """
    delta = event.actions.state_delta
    if delta:
        session.state.update(delta)
        if any(k.startswith(TEMP_PREFIX) for k in delta):
            event.actions.state_delta = without_temp(delta)
    session.events.append(event)
    session.last_update_time = event.timestamp


def clear_temp_state(session: Session) -> None:
    for key in [k for k in session.state if k.startswith(TEMP_PREFIX)]:
        del session.state[key]


def stored_form(event: Event) -> Event:
    """The event as stored: without temp: keys. The event itself when it has none, else a shallow
    copy (the event is not changed either way; callers only read the result)."""
    delta = event.actions.state_delta
    if any(k.startswith(TEMP_PREFIX) for k in delta):
        actions = event.actions.model_copy(update={"state_delta": without_temp(delta)})
        return event.model_copy(update={"actions": actions})
    return event


def stored_copy_json(event: Event) -> str:
    """The event as stored (without temp: keys), as JSON; the event itself is not changed. An event
    JSON cannot hold (NaN, Infinity, a lone surrogate) is an InvalidInputError (``model_json``)."""
    return model_json(stored_form(event), f"event {event.id!r}")


def model_json(model: BaseModel, what: str) -> str:
    """``model.model_dump_json()``, for storing: what JSON cannot hold is an InvalidInputError naming
    ``what`` (and, for NaN or Infinity, where in it), never text that reads back as something else.

    pydantic writes NaN and Infinity as null by default: stored that way, a value would come back as
    None with no error anywhere. Here the values of no declared type (state deltas, metadata, tool
    arguments and results: where outside data goes) are written as the JS constants instead, so
    finding them costs a substring scan of the output; only when one of those words is there
    (possibly inside a string) is the text parsed to tell. Typed float fields still write null:
    ``prepare_event_for_storage`` checks an event's.
    """
    serializer = _constants_serializer(type(model))
    try:
        text = model.model_dump_json() if serializer is None else serializer.to_json(model).decode()
    except PydanticSerializationError as e:
        raise InvalidInputError(
            f"{what} is not JSON-serializable ({e}); metadata and payloads must be plain JSON values, "
            "and text must be valid Unicode (no unpaired surrogate)"
        ) from None
    # One-character tests first: a single memchr each, where the word searches take microseconds on
    # a long event; JSON's own words (keys, true, null) hold no capital N or I.
    if ("N" in text and "NaN" in text) or ("I" in text and "Infinity" in text):
        found = _non_finite_paths(json.loads(text, parse_constant=_NonFinite))
        if found:
            raise InvalidInputError(
                f"{what} holds {_listed(found)}, which JSON (and so Postgres jsonb) cannot hold; use None or "
                "a string instead. Nothing was written"
            )
    return text


_CONSTANTS_SERIALIZERS: weakref.WeakKeyDictionary[type[BaseModel], SchemaSerializer | None] = (
    weakref.WeakKeyDictionary()
)


def _constants_serializer(cls: type[BaseModel]) -> SchemaSerializer | None:
    """A serializer of ``cls`` run with the model's config plus ``ser_json_inf_nan="constants"``.

    Built from the model's own core schema, so pydantic reuses the model's serializer and the output
    is ``model_dump_json()``'s: only the run-time config differs, and that is what values of no
    declared type (``Any``, ``dict[str, Any]``, in nested models too) are written by; a model's own
    config cannot be changed per call. None (plain ``model_dump_json``) for a schema whose config is
    not at its top (a recursive model's definitions): no adk type has one. One per class."""
    if cls in _CONSTANTS_SERIALIZERS:
        return _CONSTANTS_SERIALIZERS[cls]
    schema = cls.__pydantic_core_schema__
    config = schema.get("config") if schema.get("type") == "model" else None
    serializer = None
    if config is not None:
        serializer = SchemaSerializer(schema, {**config, "ser_json_inf_nan": "constants"})
    _CONSTANTS_SERIALIZERS[cls] = serializer
    return serializer


class _NonFinite(str):
    """A NaN or Infinity constant as ``json.loads`` parsed it (``parse_constant``)."""


def _non_finite_paths(value: Any, path: str = "") -> list[tuple[str, str]]:
    """The dotted paths of the _NonFinite values in parsed JSON, with the constant at each."""
    if isinstance(value, _NonFinite):
        return [(path, str(value))]
    if isinstance(value, dict):
        return [
            found for key, item in value.items() for found in _non_finite_paths(item, f"{path}.{key}" if path else str(key))
        ]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _non_finite_paths(item, f"{path}[{i}]")]
    return []


def _listed(found: list[tuple[str, str]]) -> str:
    return ", ".join(f"{token} at {path or '(the value)'}" for path, token in found[:5]) + (
        f" and {len(found) - 5} more" if len(found) > 5 else "")


def stored_content(stored_json: str) -> Any:
    """A stored event's JSON in the form a repeat of it is compared in: read through the current
    Event model (a field added since it was stored takes its default), then as plain JSON values,
    so key order, number spelling (1 and 1.0) and JSON round trips (a retried activity's input,
    jsonb's own rewriting) never make the same event look different."""
    try:
        return json.loads(Event.model_validate_json(stored_json).model_dump_json())
    except ValueError:  # not an Event this code can read (a newer field): compare it as it is
        return json.loads(stored_json)


NOT_COMPARED = ("timestamp",)
"""Fields a repeat may change. A durable workflow task that stored events (its end-of-invocation
flush, a local activity) and then died before Temporal recorded it runs again on another worker:
the same deterministic event ids, but ``workflow.now()`` is the new task's time. That run is the
one Temporal keeps, so its repeat is the same event, stored at another moment, not a conflict
(seen in tests/integration/test_scale_out.py when two of three workers are killed)."""


def check_repeat(stored_json: str, event: Event) -> None:
    """Raise EventConflictError unless ``event`` is the event stored as ``stored_json``: every
    field of its stored form (temp: keys dropped) compared, in ``stored_content``'s form, except
    ``NOT_COMPARED``."""
    stored, given = stored_content(stored_json), json.loads(stored_copy_json(event))
    for field in NOT_COMPARED:
        for value in (stored, given):
            if isinstance(value, dict):
                value.pop(field, None)
    if stored != given:
        raise event_conflict(event.id, _differing(stored, given))


def _differing(stored: Any, given: Any, path: str = "") -> list[str]:
    """The dotted paths where two JSON values differ (at most a few), for the conflict's message."""
    if isinstance(stored, dict) and isinstance(given, dict):
        found: list[str] = []
        for key in sorted(set(stored) | set(given)):
            found += _differing(stored.get(key), given.get(key), f"{path}.{key}" if path else str(key))
        return found[:5]
    if isinstance(stored, list) and isinstance(given, list) and len(stored) == len(given):
        return [d for i, (a, b) in enumerate(zip(stored, given, strict=True)) for d in _differing(a, b, f"{path}[{i}]")][:5]
    return [] if stored == given else [path or "(the whole event)"]


def event_conflict(event_id: str, fields: list[str] | None = None) -> EventConflictError:
    differs = f" (differs in {', '.join(fields)})" if fields else ""
    return EventConflictError(
        f"event {event_id!r} is already stored in this session with different content{differs}; nothing was written. "
        "An event id names one event: append the stored event unchanged to repeat it, or give the new "
        "event a new id (runtime.new_id())",
        event_id=event_id,
    )


def unique_events(events: list[Event]) -> list[Event]:
    """``events`` without later repeats of an id in the list (the first keeps its place); an id
    that comes back with different content raises EventConflictError."""
    first: dict[str, Event] = {}
    unique = []
    for event in events:
        earlier = first.get(event.id)
        if earlier is None:
            first[event.id] = event
            unique.append(event)
        elif earlier is not event:
            check_repeat(stored_copy_json(earlier), event)
    return unique


def select_events(events: list[Event], config: GetSessionConfig | None) -> list[Event]:
    """Apply a GetSessionConfig to an ordered event list (the in-memory reference semantics)."""
    if config is None:
        return events
    if config.through_event_id is not None:
        for i, e in enumerate(events):
            if e.id == config.through_event_id:
                events = events[: i + 1]
                break
        else:
            events = []
    if config.after_event_id is not None:
        for i, e in enumerate(events):
            if e.id == config.after_event_id:
                events = events[i + 1 :]
                break
        else:
            events = []
    if config.after_timestamp is not None:
        events = [e for e in events if e.timestamp >= config.after_timestamp]
    if config.num_recent_events is not None:
        events = events[-config.num_recent_events :] if config.num_recent_events > 0 else []
    if config.skip_compacted:
        events = without_compacted(events)
    return events


def copy_session(session: Session) -> Session:
    return copy.deepcopy(session)
