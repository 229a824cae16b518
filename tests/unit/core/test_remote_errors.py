"""RemoteError.rebuilt: an exception reported by an activity becomes its own class again where the
code around the call can name it (tests/scenarios.py checks that on_tool_error callbacks see the
same class in both runtimes)."""

from __future__ import annotations

import email.errors
from collections.abc import Callable
from typing import Any

from adk_core.errors import RemoteError, ToolError, error_class_path, portable_args


class Declined(Exception):
    pass


class Shop:
    class OutOfStock(LookupError):
        pass


class NeedsCode(Exception):
    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class Reworded(Exception):
    def __init__(self, amount: int) -> None:
        super().__init__(f"amount {amount} is too large")


def callback_here(error: Exception) -> None:
    """Stands for an on_tool_error callback defined in this module."""


def _reported(error: Exception) -> RemoteError:
    """What the tool activity reports, as the durable runtime raises it in the workflow."""
    return RemoteError(
        str(error), error_type=type(error).__name__, error_class=error_class_path(error), error_args=portable_args(error)
    )


def _function_in(source: str, **names: Any) -> Callable[..., Any]:
    """A function of another module, whose namespace holds ``names`` and what ``source`` imports."""
    namespace: dict[str, Any] = {"__name__": "elsewhere", **names}
    exec(source + "\ndef callback(error):\n    pass\n", namespace)
    return namespace["callback"]


def test_builtins_and_adk_errors_come_back_as_themselves_anywhere() -> None:
    for original in (ValueError("bad"), KeyError("sku"), ZeroDivisionError("division by zero"), ToolError("broken"),
                     OSError(2, "No such file")):
        rebuilt = _reported(original).rebuilt()
        assert type(rebuilt) is type(original) and str(rebuilt) == str(original) and rebuilt.args == original.args


def test_app_classes_are_found_through_the_modules_of_the_code_nearby() -> None:
    for original in (Declined("card declined"), Shop.OutOfStock("sku-9")):
        assert isinstance(_reported(original).rebuilt(), RemoteError), "nothing nearby names it"
        rebuilt = _reported(original).rebuilt(near=[callback_here])
        assert type(rebuilt) is type(original) and str(rebuilt) == str(original)
    imported_by_name = _function_in("", Declined=Declined)  # as after ``from shop import Declined``
    assert type(_reported(Declined("x")).rebuilt(near=[imported_by_name])) is Declined
    package_imported = _function_in("import email.errors")
    assert type(_reported(email.errors.HeaderParseError("bad header")).rebuilt(near=[package_imported])) is (
        email.errors.HeaderParseError
    )


def test_what_cannot_be_rebuilt_faithfully_stays_a_remote_error() -> None:
    def local() -> Exception:
        class Inner(Exception):
            pass

        return Inner("defined in a function")

    cases: list[Any] = [
        NeedsCode("declined", code=51),  # the constructor wants more than the args
        local(),  # not reachable by name
        Reworded(5),  # rebuilt from its args it would print "amount amount 5 is too large is too large"
        KeyError(("a", "b")),  # a tuple does not survive JSON: rebuilt from the message it prints differently
    ]
    for original in cases:
        reported = _reported(original)
        assert reported.rebuilt(near=[callback_here, local]) is reported, original
        assert reported.error_type == type(original).__name__ and str(reported) == str(original)


def test_only_exception_classes_are_built() -> None:
    for path in ("builtins:int", "builtins:KeyboardInterrupt", "builtins:print", None, "builtins", "nowhere:Boom"):
        reported = RemoteError("boom", error_type="Boom", error_class=path, error_args=["boom"])
        assert reported.rebuilt(near=[callback_here]) is reported
