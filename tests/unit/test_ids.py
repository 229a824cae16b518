"""The one id rule (adk_core.ids) and the workflow ids built from it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adk_core.errors import InvalidInputError
from adk_core.ids import validate_id
from adk_temporal.workflows import session_workflow_id

# Ids as users send them: printable text, with the separators that used to collide weighted in.
_ID = st.text(alphabet=st.sampled_from("ab/%2F x.-_:é"), min_size=1, max_size=8).filter(lambda s: s == s.strip())


@given(_ID, _ID, _ID, _ID, _ID, _ID)
def test_distinct_triples_never_share_a_workflow_id(a1: str, u1: str, s1: str, a2: str, u2: str, s2: str) -> None:
    same_id = session_workflow_id(a1, u1, s1) == session_workflow_id(a2, u2, s2)
    assert same_id == ((a1, u1, s1) == (a2, u2, s2))


def test_the_reported_collision_is_gone() -> None:
    assert session_workflow_id("probe", "carol", "x/diary") != session_workflow_id("probe", "carol/x", "diary")
    assert session_workflow_id("probe", "carol", "x/diary") == "adk-session/probe/carol/x%2Fdiary"


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("", "is empty"),
        (" padded", "leading or trailing whitespace"),
        ("padded ", "leading or trailing whitespace"),
        ("nul\x00", "control character"),
        ("tab\there", "control character"),
        ("u\ud800", "lone surrogate"),
        ("x" * 257, "the limit is 256"),
        (42, "ids are strings"),
    ],
)
def test_bad_ids_are_refused_with_what_to_do(value: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        validate_id("session id", value)
    with pytest.raises(InvalidInputError):
        session_workflow_id("app", "user", value)  # type: ignore[arg-type]


def test_ids_with_inner_spaces_and_punctuation_are_fine() -> None:
    assert validate_id("user id", "carol smith/x%2F@example.com") == "carol smith/x%2F@example.com"
