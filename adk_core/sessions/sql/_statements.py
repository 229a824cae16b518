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

from adk_core.sql import concat, jsonb_param
from adk_core.sql.schema import app_states, events, sessions, user_states

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

_created = CREATE_SESSION.returning(sessions.c.state, sessions.c.update_time).cte("created")
CREATE_AND_READ_SESSION = sa.select(
    _created.c.id,
    _created.c.state,
    _created.c.update_time,
    APP_STATE.scalar_subquery().label("app_state"),
    USER_STATE.scalar_subquery().label("user_state"),
).select_from(sa.select(sa.literal_column("1").label("one")).subquery("one").outerjoin(_created, sa.true()))
"""CREATE_SESSION and GET_SESSION's columns in one statement, for a session without app: or user:
state to merge: always one row, whose id is NULL when the session existed already (nothing inserted).
The shared state is read in the insert's snapshot, which the insert does not change."""
# Oldest activity first, ties by user then id, as google-adk: the last session is the one most
# recently active (update_time is the last event's timestamp, or the creation time).
_LIST_ORDER = (sessions.c.update_time, sessions.c.user_id, sessions.c.id)
LIST_APP_SESSIONS = _SESSION_ROWS.where(sessions.c.app_name == P("app")).order_by(*_LIST_ORDER)
LIST_USER_SESSIONS = _SESSION_ROWS.where(
    sessions.c.app_name == P("app"), sessions.c.user_id == P("user")
).order_by(*_LIST_ORDER)


_EVENT_KEY = (events.c.app_name, events.c.user_id, events.c.session_id, events.c.id)


def _seq_of(id_param: str) -> sa.ScalarSelect[Any]:
    """The seq of the session's event whose id is ``:id_param`` (NULL when it has none), found through the
    primary key whatever the planner's statistics say: the first key at or after (:app, :user, :sid,
    :id_param), checked to be that key. Written as one row comparison in the key's order, because on a
    table Postgres has not analyzed yet (a new database, until autovacuum first gets to it) any equality
    on the session makes it take adk_events_session_seq and read the whole session (3.8 ms at 10,000
    events, against 0.04 through the key; the session's columns are checked after the limit)."""
    first = (
        sa.select(*_EVENT_KEY, events.c.seq)
        .where(sa.tuple_(*_EVENT_KEY) >= sa.tuple_(P("app"), P("user"), P("sid"), P(id_param)))
        .order_by(*_EVENT_KEY)
        .limit(sa.literal_column("1"))  # a literal: a generic plan is made knowing it is one row
        .subquery(f"{id_param}_event")
    )
    is_it = (first.c.app_name == P("app"), first.c.user_id == P("user"), first.c.session_id == P("sid"),
             first.c.id == P(id_param))
    return sa.select(first.c.seq).where(*is_it).scalar_subquery()


def _stored_event(id_sql: str) -> str:
    """SQL for the stored jsonb of this session's (:app, :user, :sid) event whose id is ``id_sql``, or
    NULL: looked up as ``_seq_of`` looks an id up, through the primary key whatever the statistics say."""
    return (
        "(SELECT first.event FROM (SELECT e.event, e.app_name, e.user_id, e.session_id, e.id FROM adk_events e "
        f"WHERE (e.app_name, e.user_id, e.session_id, e.id) >= (:app, :user, :sid, {id_sql}) "
        "ORDER BY e.app_name, e.user_id, e.session_id, e.id LIMIT 1) AS first "
        f"WHERE first.app_name = :app AND first.user_id = :user AND first.session_id = :sid AND first.id = {id_sql})"
    )


@functools.cache
def get_session_with_events(through: bool, after: bool, last_n: bool, after_id: bool = False) -> sa.Select[Any]:
    """GET_SESSION plus an ``events`` column: the selected events as one JSON array, oldest first.

    One statement, so one snapshot: the state returned is the state after the events returned.
    Filters (same semantics as ``base.select_events``): ``through`` = events up to and including
    event id :through_id; ``after`` = timestamp >= :after_ts; ``after_id`` = after event :after_id; ``last_n`` = the last :n of those. All
    run on the (app_name, user_id, session_id, seq) index: the last N are read backwards from the
    end of the session and no other row is touched. The ids given are looked up by key (``_seq_of``).
    """
    chosen = sa.select(events.c.event, events.c.seq).where(*_ITS_EVENTS)
    if through:
        chosen = chosen.where(events.c.seq <= _seq_of("through_id"))
    if after:
        chosen = chosen.where(events.c.timestamp >= P("after_ts"))
    if after_id:
        chosen = chosen.where(events.c.seq > _seq_of("after_id"))
    if last_n:
        chosen = chosen.order_by(events.c.seq.desc()).limit(P("n", type_=sa.Integer))
    rows = chosen.subquery("chosen")
    as_array = sa.func.coalesce(
        sa.func.json_agg(aggregate_order_by(rows.c.event, rows.c.seq)), sa.text("'[]'::json")
    )
    return GET_SESSION.add_columns(sa.select(sa.cast(as_array, sa.Text)).scalar_subquery().label("events"))


@functools.cache
def get_session_skipping_compacted(through: bool) -> sa.Select[Any]:
    """``get_session_with_events`` for ``GetSessionConfig.skip_compacted``: the events
    ``adk_core.flow.contents.without_compacted`` keeps (of those through event :through_id, with
    ``through``), chosen by index so the read does not grow with what the newest compaction hides.

    ``cut``, one row: the newest compaction's seq and range, through adk_events_session_compactions
    read backwards. Its seq is 0 when the session has none, or some of its compaction ranges were
    sealed before they were recorded (``compaction_ranges_complete``): everything is read then.
    Then, in index scans: the events from the newest compaction on (adk_events_session_seq); before
    it, the events outside its range (adk_events_session_timestamp, one scan per side); the last
    event it covers (adk_events_session_seq backwards, past the events outside its range); and the
    compactions whose range its own does not hold, one scan per side of its range
    (adk_events_compaction_starts, adk_events_compaction_ends; migration 0009). None of them reads
    what the newest compaction holds: 8,000 nested compactions read in 2.2 ms, against 6.6 ms when
    the last scan read every compaction before the cut.
    """
    upto = (events.c.seq <= _seq_of("through_id"),) if through else ()
    newest = (
        sa.select(events.c.seq, events.c.covers_from, events.c.covers_to)
        .where(*_ITS_EVENTS, events.c.covers_from.is_not(None), *upto)
        .order_by(events.c.seq.desc())
        .limit(sa.literal_column("1"))
        .subquery("newest")
    )
    cut = (
        sa.select(
            sa.case(
                (sessions.c.compaction_ranges_complete, sa.func.coalesce(newest.c.seq, sa.literal_column("0"))),
                else_=sa.literal_column("0"),
            ).label("seq"),
            newest.c.covers_from.label("lo"),
            newest.c.covers_to.label("hi"),
        )
        .select_from(sessions.outerjoin(newest, sa.true()))
        .where(*_THIS_SESSION)
        .cte("cut")
    )
    cut_seq, lo, hi = (sa.select(column).scalar_subquery() for column in (cut.c.seq, cut.c.lo, cut.c.hi))
    before_cut = (*_ITS_EVENTS, events.c.seq < cut_seq)
    plain = events.c.covers_from.is_(None)
    chosen = sa.union_all(
        sa.select(events.c.event, events.c.seq).where(*_ITS_EVENTS, events.c.seq >= cut_seq, *upto),
        *(
            # Each range alone, and "seq + 0" (no condition adk_events_session_seq can take): the
            # planner then scans the timestamp range. Given "seq < cut" or the two ranges ORed, it
            # read all the session's events below the cut and filtered them.
            sa.select(events.c.event, events.c.seq).where(
                *_ITS_EVENTS, events.c.seq + sa.literal_column("0") < cut_seq, plain, outside
            )
            for outside in (events.c.timestamp < lo, events.c.timestamp > hi)
        ),
        sa.select(
            # "timestamp + 0": the range is no condition adk_events_session_timestamp can take, so
            # the planner walks the seqs back from the cut (past the events outside the range, the
            # overlap) instead of reading every event in the range and sorting them.
            sa.select(events.c.event, events.c.seq)
            .where(*before_cut, plain, (events.c.timestamp + sa.literal_column("0")).between(lo, hi))
            .order_by(events.c.seq.desc())
            .limit(sa.literal_column("1"))
            .subquery("last_covered")
        ),
        # The compactions the newest one's range does not hold: those starting before it, then those
        # ending after it (and not starting before). Each side alone, with "seq + 0": the planner
        # then scans that side's index from the range's end (migration 0009) instead of every
        # compaction before the cut. (On a table it has no statistics for yet, it may still read
        # them all: a new table, small, until autovacuum's first pass.)
        *(
            sa.select(events.c.event, events.c.seq).where(
                *_ITS_EVENTS, events.c.seq + sa.literal_column("0") < cut_seq, events.c.covers_from.is_not(None), side
            )
            for side in (events.c.covers_from < lo, sa.and_(events.c.covers_to > hi, events.c.covers_from >= lo))
        ),
    ).subquery("chosen")
    as_array = sa.func.coalesce(
        sa.func.json_agg(aggregate_order_by(chosen.c.event, chosen.c.seq)), sa.text("'[]'::json")
    )
    return GET_SESSION.add_columns(sa.select(sa.cast(as_array, sa.Text)).scalar_subquery().label("events"))


_LOCK_SESSION = """locked AS (
  SELECT last_seq FROM adk_sessions WHERE app_name = :app AND user_id = :user AND id = :sid FOR UPDATE
)"""
_BATCH = """batch AS (
  SELECT b.event, b.n FROM jsonb_array_elements(CAST(:events_json AS jsonb)) WITH ORDINALITY AS b(event, n)
)"""
_INSERT_BATCH = """INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, branch, timestamp, event)
  SELECT :app, :user, :sid, batch.event->>'id', locked.last_seq + batch.n, batch.event->>'invocation_id',
         batch.event->>'author', batch.event->>'branch', CAST(batch.event->>'timestamp' AS float8), batch.event
  FROM locked, batch"""
_BUMP_AFTER_BATCH = """bump AS (
  UPDATE adk_sessions SET last_seq = (SELECT max(seq) FROM ins), update_time = :now
  WHERE app_name = :app AND user_id = :user AND id = :sid AND EXISTS (SELECT 1 FROM ins)
  RETURNING 1
)"""

APPEND_PLAIN_EVENTS = sa.text(
    f"""WITH {_LOCK_SESSION},
{_BATCH},
looked AS (
  SELECT batch.event->>'id' AS id, batch.event, {_stored_event("batch.event->>'id'")} AS stored
  FROM batch
),
prior AS (
  SELECT id, stored, stored = event AS same FROM looked WHERE stored IS NOT NULL
),
ins AS (
  {_INSERT_BATCH} WHERE NOT EXISTS (SELECT 1 FROM prior WHERE NOT prior.same) ORDER BY batch.n
  ON CONFLICT ON CONSTRAINT adk_events_pkey DO NOTHING
  RETURNING seq, id
),
{_BUMP_AFTER_BATCH}
SELECT (SELECT count(*) FROM locked) AS found, (SELECT array_agg(id) FROM ins) AS inserted,
       (SELECT CAST(json_agg(stored) AS text) FROM prior WHERE NOT same) AS differing,
       (SELECT array_agg(id) FROM prior) AS existing, (SELECT count(*) FROM bump) AS bumped"""
)
"""Append several events that carry no state delta and are no compaction in ONE statement (a
compaction's range goes in columns of its own: ``append_event_statement``). ``events_json`` is a JSON
array of the events' stored forms, in order; the columns come from each event's own fields. It
locks the session row, numbers the batch after ``last_seq`` in its order, inserts what is not
stored yet (a retried batch finds some of it stored: ON CONFLICT skips those) and moves
``last_seq`` to the newest number inserted: one round trip for the batch instead of one per event
plus BEGIN and COMMIT. Columns out: ``found`` (the session exists), ``inserted`` (the ids inserted,
or NULL), ``differing`` (a JSON array of the stored events whose id is in the batch with other
jsonb, or NULL: then nothing at all is inserted, and the service decides whether they are
repeats or conflicts), ``existing`` (the ids of the batch already stored, or NULL).
A skipped event leaves a gap in the numbering; ``seq`` only orders a session's events.
``looked`` looks each batch event up by primary key (``_stored_event``: a subquery per batch event; as a join,
the generic plan of the prepared statement scanned the events table); ``prior`` reads the statement's snapshot, so an event another
transaction stored while this one waited for the session lock is in none of the columns (the
service reads it back).
(Numbering only the events not stored yet needs an anti-join whose generic plan, once the
statement is prepared, scanned the events table: 1.3 ms of database CPU per two-event batch,
and 7 ms once the table had grown by a few thousand events; this statement takes 0.4 ms.)"""


APPEND_NEW_PLAIN_EVENTS = sa.text(
    f"""WITH {_LOCK_SESSION},
{_BATCH},
ins AS (
  {_INSERT_BATCH} ORDER BY batch.n
  RETURNING seq, id
),
{_BUMP_AFTER_BATCH}
SELECT (SELECT count(*) FROM locked) AS found, (SELECT array_agg(id) FROM ins) AS inserted,
       CAST(NULL AS text) AS differing, CAST(NULL AS text[]) AS existing, (SELECT count(*) FROM bump) AS bumped"""
)
"""APPEND_PLAIN_EVENTS for a batch none of whose ids is stored yet, which is nearly every batch: it
reads no stored event. An id that is stored already (a retried call's batch, or one another writer
stored meanwhile) fails the whole statement with a unique violation on adk_events_pkey, inserting
nothing, and the service runs APPEND_PLAIN_EVENTS instead, which looks each id up and tells repeats
from conflicts. Why not always the lookup: on a table Postgres has not analyzed yet (a new database,
until autovacuum first gets to it), its planner looks each id up through adk_events_session_seq,
reading the whole session once per event of the batch: 1 ms for an 8-event batch in a session of
900 events, growing with the session; this statement takes 0.3 ms whatever the statistics say."""

EVENT_JSON = sa.text(f"SELECT CAST({_stored_event(':event_id')} AS text)")
"""One stored event's JSON, or NULL (to compare a repeat the append statement could not see)."""


@functools.cache
def append_event_statement(session_delta: bool, app_delta: bool, user_delta: bool, new_only: bool = False) -> sa.TextClause:
    """Append one event in ONE statement: lock the session row, number and insert the event (with its
    compaction range, ``:range_from``/``:range_to``, or NULLs), and
    merge the state deltas, the merges only when the insert happened (an event id already stored
    changes nothing). Atomic on its own, so it runs without an explicit transaction: one round trip
    instead of five. Columns out: ``found`` (the session exists), ``inserted`` (the new seq or NULL),
    ``differing`` (the stored event's JSON when its id is stored with other jsonb, else NULL: the
    service decides whether that is a repeat or a conflict), ``existing`` (whether the id was stored).

    ``new_only``: for an event whose id is not stored yet, as APPEND_NEW_PLAIN_EVENTS is for a batch:
    no lookup of the id; a stored one fails the statement (a unique violation on adk_events_pkey,
    nothing written) and the service runs the statement with the lookup instead.

    Lock order is the same in every append (session row, then app row, then user row), so two
    appends never wait on each other in a cycle.
    """
    parts = [
        _LOCK_SESSION,
        *(() if new_only else (f"""prior AS (
  SELECT stored, stored = CAST(:event_json AS jsonb) AS same FROM (SELECT {_stored_event(":event_id")} AS stored) AS looked
  WHERE stored IS NOT NULL
)""",)),
        """ins AS (
  INSERT INTO adk_events (app_name, user_id, session_id, id, seq, invocation_id, author, branch, timestamp, event,
                          covers_from, covers_to)
  SELECT :app, :user, :sid, :event_id, locked.last_seq + 1, :invocation, :by, :on_branch, :at,
         CAST(:event_json AS jsonb), :range_from, :range_to
  FROM locked"""
        + ("" if new_only else "\n  ON CONFLICT ON CONSTRAINT adk_events_pkey DO NOTHING")
        + """
  RETURNING seq
)""",
        """bump AS (
  UPDATE adk_sessions SET last_seq = ins.seq, update_time = :now"""
        + (", state = adk_sessions.state || CAST(:session_json AS jsonb)" if session_delta else "")
        + """
  FROM ins WHERE app_name = :app AND user_id = :user AND id = :sid
  RETURNING 1
)""",
    ]
    if app_delta:
        parts.append(
            """app AS (
  INSERT INTO adk_app_states (app_name, state, update_time)
  SELECT :app, CAST(:app_json AS jsonb), :now FROM ins
  ON CONFLICT (app_name) DO UPDATE
  SET state = adk_app_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
  RETURNING 1
)"""
        )
    if user_delta:
        parts.append(
            """usr AS (
  INSERT INTO adk_user_states (app_name, user_id, state, update_time)
  SELECT :app, :user, CAST(:user_json AS jsonb), :now FROM ins
  ON CONFLICT (app_name, user_id) DO UPDATE
  SET state = adk_user_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
  RETURNING 1
)"""
        )
    counted = ["(SELECT count(*) FROM bump) AS bumped"]
    if app_delta:
        counted.append("(SELECT count(*) FROM app) AS app_merged")
    if user_delta:
        counted.append("(SELECT count(*) FROM usr) AS user_merged")
    looked_up = (
        "CAST(NULL AS text) AS differing, false AS existing, "
        if new_only
        else "(SELECT CAST(stored AS text) FROM prior WHERE NOT same) AS differing, EXISTS (SELECT 1 FROM prior) AS existing, "
    )
    return sa.text(
        "WITH "
        + ",\n".join(parts)
        + "\nSELECT (SELECT count(*) FROM locked) AS found, (SELECT seq FROM ins) AS inserted, "
        + looked_up
        + ", ".join(counted)
    )
