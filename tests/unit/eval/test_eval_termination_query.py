"""The state_matches query language: every operator, dotted paths, lists, missing fields, validation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from adk_core.errors import ConfigurationError
from adk_core.eval import TerminateWhen, matches
from adk_core.eval.scopes import ScopedView

DOC = {
    "session": {
        "escalation": {"urgency_level": "emergency_999", "score": 7},
        "tags": ["cardiac", "urgent"],
        "count": 3,
        "flag": True,
        "nothing": None,
        "answers": [{"q": "how long", "a": "30 min"}],
    }
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"session": {"escalation": {"$exists": True}}}, True),
        ({"session": {"missing": {"$exists": True}}}, False),
        ({"session": {"missing": {"$exists": False}}}, True),
        ({"session.escalation.urgency_level": "emergency_999"}, True),
        ({"session.escalation.urgency_level": {"$eq": "urgent_gp"}}, False),
        ({"session.escalation.urgency_level": {"$ne": "urgent_gp"}}, True),
        ({"session.missing": {"$ne": 1}}, True),
        ({"session.count": {"$gt": 2}}, True),
        ({"session.count": {"$gt": 3}}, False),
        ({"session.count": {"$gte": 3}}, True),
        ({"session.count": {"$lt": 3}}, False),
        ({"session.count": {"$lte": 3, "$gt": 1}}, True),
        ({"session.count": {"$gt": "a"}}, False),  # different types: simply false
        ({"session.missing": {"$lt": 10}}, False),
        ({"session.count": {"$in": [1, 2, 3]}}, True),
        ({"session.count": {"$nin": [1, 2, 3]}}, False),
        ({"session.missing": {"$nin": [1]}}, True),
        ({"session.tags": "cardiac"}, True),  # a list matches when an element does
        ({"session.tags": {"$in": ["urgent", "x"]}}, True),
        ({"session.tags": ["cardiac", "urgent"]}, True),
        ({"session.answers.0.a": "30 min"}, True),
        ({"session.answers.1.a": {"$exists": True}}, False),
        ({"session.count": {"$not": {"$gt": 5}}}, True),
        ({"session.count": {"$not": 3}}, False),
        ({"$not": {"session.count": 3}}, False),
        ({"$and": [{"session.count": 3}, {"session.flag": True}]}, True),
        ({"$and": [{"session.count": 3}, {"session.flag": False}]}, False),
        ({"$or": [{"session.count": 4}, {"session.flag": True}]}, True),
        ({"$or": [{"session.count": 4}, {"session.flag": False}]}, False),
        ({"session.count": {"$or": [{"$lt": 0}, {"$gt": 2}]}}, True),
        ({"session.count": {"$and": [{"$gt": 0}, {"$lt": 2}]}}, False),
        ({"session.flag": 1}, False),  # True is not 1 in JSON
        ({"session.count": True}, False),
        ({"session.nothing": None}, True),
        ({"session.missing": None}, True),  # as in MongoDB: null matches a missing field
        ({"session.escalation": {"$eq": {"urgency_level": "emergency_999", "score": 7}}}, True),
        ({"session": {"escalation": {"score": {"$gte": 7}}, "count": 3}}, True),
        ({"session": {"escalation": {"score": {"$gte": 8}}}}, False),
        ({"session.count": {"$exists": True}, "session.flag": True}, True),
    ],
)
def test_query(query: dict, expected: bool) -> None:
    assert matches(query, DOC) is expected


def test_scoped_view_exposes_prefixed_scopes() -> None:
    state = {"escalation": {"level": 1}, "patient:age": 55, "user:name": "Ann", "app:region": "uk", "temp:x": 1}
    view = ScopedView(state)
    assert matches({"patient": {"age": {"$gte": 50}}}, view)
    assert matches({"user.name": "Ann", "app.region": "uk", "session.escalation.level": 1}, view)
    assert not matches({"practice": {"region": {"$exists": True}}}, view)  # an empty scope
    assert "app:region" not in view["session"] and view["session"]["patient:age"] == 55


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ({"session": {"x": {"$regex": "a"}}}, "unknown operator '$regex'"),
        ({"$nor": []}, "not a top-level operator"),
        ({"x": {"$in": "abc"}}, "$in takes a list"),
        ({"x": {"$exists": 1}}, "$exists takes True or False"),
        ({"$and": []}, "non-empty list"),
        ({"x": {"$gt": 1, "y": 2}}, "mixes operators and field names"),
        ({"x": {"$or": "no"}}, "$or takes a non-empty list"),
    ],
)
def test_malformed_queries_are_refused_when_the_case_is_built(query: dict, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=None) as info:
        TerminateWhen(state_matches=query)
    assert fragment in str(info.value)


def test_terminate_when_checks_its_limits() -> None:
    assert TerminateWhen(max_duration=timedelta(seconds=2)).max_duration_seconds == 2.0
    assert TerminateWhen(max_duration=1.5).max_duration_seconds == 1.5
    with pytest.raises(ConfigurationError):
        TerminateWhen(max_turns=0)
    with pytest.raises(ConfigurationError):
        TerminateWhen(max_duration=0)
