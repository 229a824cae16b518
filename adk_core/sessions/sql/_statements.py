"""The SQL of the session store, built once at import; the service only binds parameters.

Parameter names differ from column names on purpose: SQLAlchemy reserves a column's own name for
the VALUES/SET clause of INSERT and UPDATE.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ._json import concat, jsonb_param
from .schema import app_states, events, sessions, user_states

P = sa.bindparam

_THIS_SESSION = (sessions.c.app_name == P("app"), sessions.c.user_id == P("user"), sessions.c.id == P("sid"))
_ITS_EVENTS = (events.c.app_name == P("app"), events.c.user_id == P("user"), events.c.session_id == P("sid"))

CREATE_SESSION = (
    pg_insert(sessions)
    .values(
        app_name=P("app"),
        user_id=P("user"),
        id=P("sid"),
        state=jsonb_param("state_json"),
        create_time=P("now"),
        update_time=P("now"),
    )
    .on_conflict_do_nothing()
    .returning(sessions.c.id)
)

_app_insert = pg_insert(app_states).values(
    app_name=P("app"), state=jsonb_param("app_json"), update_time=P("now")
)
MERGE_APP_STATE = _app_insert.on_conflict_do_update(
    index_elements=[app_states.c.app_name],
    set_={"state": concat(app_states.c.state, _app_insert.excluded.state), "update_time": P("now")},
)
"""Upsert the app row, changing only the keys of the delta (jsonb ||)."""

_user_insert = pg_insert(user_states).values(
    app_name=P("app"), user_id=P("user"), state=jsonb_param("user_json"), update_time=P("now")
)
MERGE_USER_STATE = _user_insert.on_conflict_do_update(
    index_elements=[user_states.c.app_name, user_states.c.user_id],
    set_={"state": concat(user_states.c.state, _user_insert.excluded.state), "update_time": P("now")},
)

_bump = (
    sa.update(sessions)
    .where(*_THIS_SESSION)
    .values(last_seq=sessions.c.last_seq + 1, update_time=P("now"))
    .returning(sessions.c.last_seq)
)
LOCK_AND_NUMBER = _bump
"""Lock the session row until commit and allocate the next event seq (no row: no session)."""
LOCK_AND_NUMBER_WITH_STATE = _bump.values(state=concat(sessions.c.state, jsonb_param("session_json")))

INSERT_EVENT = (
    pg_insert(events)
    .values(
        app_name=P("app"),
        user_id=P("user"),
        session_id=P("sid"),
        id=P("event_id"),
        seq=P("new_seq"),
        invocation_id=P("invocation"),
        author=P("by"),
        branch=P("on_branch"),
        timestamp=P("at"),
        event=jsonb_param("event_json"),
    )
    .on_conflict_do_nothing(constraint="adk_events_pkey")
    .returning(events.c.seq)
)
"""Insert the event unless its id is stored already (then no row comes back)."""

DELETE_EVENTS = sa.delete(events).where(*_ITS_EVENTS)
DELETE_SESSION = sa.delete(sessions).where(*_THIS_SESSION)

USER_STATE = sa.select(user_states.c.state).where(
    user_states.c.app_name == P("app"), user_states.c.user_id == P("user")
)
APP_STATE = sa.select(app_states.c.state).where(app_states.c.app_name == P("app"))

_SESSION_ROWS = sa.select(
    sessions.c.app_name,
    sessions.c.user_id,
    sessions.c.id,
    sessions.c.state,
    sessions.c.update_time,
    sa.select(app_states.c.state)
    .where(app_states.c.app_name == sessions.c.app_name)
    .scalar_subquery()
    .label("app_state"),
    sa.select(user_states.c.state)
    .where(user_states.c.app_name == sessions.c.app_name, user_states.c.user_id == sessions.c.user_id)
    .scalar_subquery()
    .label("user_state"),
)
"""Session rows with their app and user state alongside."""

GET_SESSION = _SESSION_ROWS.where(*_THIS_SESSION)
LIST_APP_SESSIONS = _SESSION_ROWS.where(sessions.c.app_name == P("app")).order_by(
    sessions.c.create_time, sessions.c.id
)
LIST_USER_SESSIONS = _SESSION_ROWS.where(
    sessions.c.app_name == P("app"), sessions.c.user_id == P("user")
).order_by(sessions.c.create_time, sessions.c.id)


@functools.cache
def get_session_with_events(through: bool, after: bool, last_n: bool, after_id: bool = False) -> sa.Select[Any]:
    """GET_SESSION plus an ``events`` column: the selected events as one JSON array, oldest first.

    One statement, so one snapshot: the state returned is the state after the events returned.
    Filters (same semantics as ``base.select_events``): ``through`` = events up to and including
    event id :through_id; ``after`` = timestamp > :after_ts; ``after_id`` = after event :after_id; ``last_n`` = the last :n of those. All
    run on the (app_name, user_id, session_id, seq) index: the last N are read backwards from the
    end of the session and no other row is touched.
    """
    chosen = sa.select(events.c.event, events.c.seq).where(*_ITS_EVENTS)
    if through:
        cursor = sa.select(events.c.seq).where(*_ITS_EVENTS, events.c.id == P("through_id"))
        chosen = chosen.where(events.c.seq <= cursor.scalar_subquery())
    if after:
        chosen = chosen.where(events.c.timestamp > P("after_ts"))
    if after_id:
        start = sa.select(events.c.seq).where(*_ITS_EVENTS, events.c.id == P("after_id"))
        chosen = chosen.where(events.c.seq > start.scalar_subquery())
    if last_n:
        chosen = chosen.order_by(events.c.seq.desc()).limit(P("n", type_=sa.Integer))
    rows = chosen.subquery("chosen")
    as_array = sa.func.coalesce(
        sa.func.json_agg(aggregate_order_by(rows.c.event, rows.c.seq)), sa.text("'[]'::json")
    )
    return GET_SESSION.add_columns(sa.select(sa.cast(as_array, sa.Text)).scalar_subquery().label("events"))
