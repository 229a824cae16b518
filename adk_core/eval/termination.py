"""When a simulated conversation stops: ``TerminateWhen`` and its Mongo-like state query language.

A query is a dict. Keys starting with ``$`` are logical operators; other keys are field paths
(dotted: ``"escalation.level"``, list indexes as numbers: ``"answers.0"``). A field's condition is
either an operator document (every key starts with ``$``), a nested query on the sub-document (any
other dict: the seed's ``{"session": {"escalation": {"$exists": True}}}``), or a plain value
(equality). Exact equality with a dict is ``{"$eq": {...}}``.

Operators: ``$exists``, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``,
``$not`` (on a field: negates an operator document or value; at top level: negates a query),
``$and`` / ``$or`` (a list of queries, at top level or on a field). As in MongoDB: a missing field
matches ``$exists: False``, ``$ne``, ``$nin`` and ``$eq: None``; a list field matches ``$eq`` / ``$in``
when any element does; comparing values of different types is simply false. Unlike MongoDB, a
nested dict without ``$`` keys is a sub-query, not an exact match (that is how the seed writes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import ConfigurationError

_MISSING: Any = object()
_FIELD_OPERATORS = {"$exists", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$not", "$and", "$or"}
_TOP_OPERATORS = {"$and", "$or", "$not"}


@dataclass(frozen=True)
class TerminateWhen:
    """Stop conditions for a case.

    Args:
        max_turns: the most system turns (invocations) to run; when another would start, the case
            ends as ``terminated`` with reason ``max_turns``.
        max_duration: the longest a trial may take (a timedelta, or seconds), by the runtime's clock;
            checked before each new system turn (a turn in progress is not interrupted).
        state_matches: a query over the main session's state by scope (see the module docstring),
            checked after every system turn. A match means the goal state was reached: the run
            ends, its metrics decide passed or failed, and ``termination_reason`` is ``state_matches``.
    """

    max_turns: int | None = None
    max_duration: timedelta | float | None = None
    state_matches: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.max_turns is not None and self.max_turns < 1:
            raise ConfigurationError(f"TerminateWhen.max_turns must be >= 1 or None, not {self.max_turns}")
        if self.max_duration_seconds is not None and self.max_duration_seconds <= 0:
            raise ConfigurationError("TerminateWhen.max_duration must be positive (a timedelta or seconds)")
        if self.state_matches is not None:
            validate_query(self.state_matches)

    @property
    def max_duration_seconds(self) -> float | None:
        d = self.max_duration
        return d.total_seconds() if isinstance(d, timedelta) else (float(d) if d is not None else None)


def validate_query(query: Any, *, where: str = "state_matches") -> None:
    """Raise ConfigurationError for an unknown operator or a malformed operand, before anything runs."""
    if not isinstance(query, Mapping):
        raise ConfigurationError(f"{where} must be a dict query, not {type(query).__name__}")
    for key, value in query.items():
        if key.startswith("$"):
            if key not in _TOP_OPERATORS:
                raise ConfigurationError(f"{where}: {key!r} is not a top-level operator; use one of {sorted(_TOP_OPERATORS)}")
            _validate_logical(key, value, where)
        else:
            _validate_condition(value, f"{where}.{key}")


def _validate_logical(op: str, value: Any, where: str) -> None:
    if op == "$not":
        validate_query(value, where=f"{where}.$not")
        return
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or not value:
        raise ConfigurationError(f"{where}: {op} takes a non-empty list of queries")
    for i, item in enumerate(value):
        validate_query(item, where=f"{where}.{op}[{i}]")


def _validate_condition(condition: Any, where: str) -> None:
    if not isinstance(condition, Mapping) or not condition:
        return  # a plain value: equality
    if not _is_operator_doc(condition):
        validate_query(condition, where=where)
        return
    for op, operand in condition.items():
        if op not in _FIELD_OPERATORS:
            raise ConfigurationError(f"{where}: unknown operator {op!r}; use one of {sorted(_FIELD_OPERATORS)}")
        if op in ("$in", "$nin") and (not isinstance(operand, Sequence) or isinstance(operand, str | bytes)):
            raise ConfigurationError(f"{where}: {op} takes a list")
        if op == "$exists" and not isinstance(operand, bool):
            raise ConfigurationError(f"{where}: $exists takes True or False")
        if op in ("$and", "$or"):
            if not isinstance(operand, Sequence) or isinstance(operand, str | bytes) or not operand:
                raise ConfigurationError(f"{where}: {op} takes a non-empty list of conditions")
            for i, item in enumerate(operand):
                _validate_condition(item, f"{where}.{op}[{i}]")
        if op == "$not":
            _validate_condition(operand, f"{where}.$not")


def _is_operator_doc(condition: Mapping[str, Any]) -> bool:
    keys = list(condition)
    dollar = [k for k in keys if isinstance(k, str) and k.startswith("$")]
    if dollar and len(dollar) != len(keys):
        raise ConfigurationError(
            f"condition {dict(condition)!r} mixes operators and field names; put fields in a nested query "
            "and operators in their own dict"
        )
    return bool(dollar)


# --- evaluation -----------------------------------------------------------------------------------
def matches(query: Mapping[str, Any], document: Any) -> bool:
    """Whether ``document`` (a dict, or a Mapping such as a scoped state view) satisfies ``query``."""
    for key, condition in query.items():
        if key == "$and":
            if not all(matches(q, document) for q in condition):
                return False
        elif key == "$or":
            if not any(matches(q, document) for q in condition):
                return False
        elif key == "$not":
            if matches(condition, document):
                return False
        elif not _condition_holds(_lookup(document, key), condition):
            return False
    return True


def _lookup(document: Any, path: str) -> Any:
    value = document
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value[part] if part in value else _MISSING
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _condition_holds(value: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and condition and _is_operator_doc(condition):
        return all(_operator_holds(value, op, operand) for op, operand in condition.items())
    if isinstance(condition, Mapping) and condition:
        return value is not _MISSING and isinstance(value, Mapping) and matches(condition, value)
    return _equals(value, condition)


def _operator_holds(value: Any, op: str, operand: Any) -> bool:
    if op == "$exists":
        return (value is not _MISSING) == bool(operand)
    if op == "$eq":
        return _equals(value, operand)
    if op == "$ne":
        return not _equals(value, operand)
    if op == "$in":
        return any(_equals(value, item) for item in operand)
    if op == "$nin":
        return not any(_equals(value, item) for item in operand)
    if op == "$not":
        return not _condition_holds(value, operand)
    if op == "$and":
        return all(_condition_holds(value, c) for c in operand)
    if op == "$or":
        return any(_condition_holds(value, c) for c in operand)
    return _compare(value, op, operand)


def _equals(value: Any, operand: Any) -> bool:
    if value is _MISSING:
        return operand is None
    if _same(value, operand):
        return True
    return isinstance(value, list) and not isinstance(operand, list) and any(_same(v, operand) for v in value)


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python; in a query language over JSON they are different values.
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)


def _compare(value: Any, op: str, operand: Any) -> bool:
    if value is _MISSING or value is None or isinstance(value, bool) != isinstance(operand, bool):
        return False
    if isinstance(value, list) and not isinstance(operand, list):
        return any(_compare(v, op, operand) for v in value)
    try:
        if op == "$gt":
            return bool(value > operand)
        if op == "$gte":
            return bool(value >= operand)
        if op == "$lt":
            return bool(value < operand)
        return bool(value <= operand)  # $lte
    except TypeError:
        return False
