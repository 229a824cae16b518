"""Errors raised by adk_core. Every message says what went wrong and how to fix it.

    AdkError
    ├── ConfigurationError          an agent tree, tool or setting is wrong before anything runs
    │   ├── StateKeyError           a state key breaks the naming rules
    │   └── AgentConfigError        adk_core.config: an agent config file is wrong (file:line, field, fix)
    ├── InvalidInputError           data given at run time cannot be used (oversized blob, bad JSON value)
    ├── SessionError
    │   ├── SessionNotFoundError
    │   ├── AlreadyExistsError      a session id (or artifact version) that is already taken
    │   └── EventConflictError      an event id already stored with different content
    ├── ModelError                  a model provider failed; carries status, retryable, retry_after
    ├── ToolError                   a tool (or a toolset) failed in a way the model cannot be told about
    ├── LlmCallsLimitExceededError  RunConfig.max_llm_calls was reached
    ├── OutputValidationError       a response did not match the agent's output_schema
    ├── RemoteError                 an error raised elsewhere (an activity), carried back as data
    ├── UnsupportedOperationError   a service method this context cannot offer (e.g. list_sessions
    │                               inside a durable run); also a NotImplementedError
    ├── EvalToolError               an eval called a tool that has no mock and was not passed through
    ├── EvalUserAgentError          an eval's tool yielded, but no user agent answers that tool
    │   (remote tools define theirs next to them; the model sees them as the tool's error)
    ├── McpCallError                adk_core.tools.mcp: the MCP server answered with an error (not retried)
    ├── McpUnavailableError         adk_core.tools.mcp: no answer (unreachable, died, timed out; retried)
    ├── OpenApiCallError            adk_core.tools.openapi: the API refused the call, 4xx (not retried)
    ├── OpenApiUnavailableError     adk_core.tools.openapi: no usable answer, 408/429/5xx (retried)
    ├── A2aCallError                adk_core.a2a: the remote agent refused, or its card is unusable (not retried)
    └── A2aUnavailableError         adk_core.a2a: no answer (unreachable, timed out, 408/429/5xx; retried)
"""

from __future__ import annotations

import builtins
import json
import types
from collections.abc import Iterable
from typing import Any


class AdkError(Exception):
    """Root of every error adk_core raises on purpose."""


class ConfigurationError(AdkError):
    """The agent tree, a tool, or a setting is wrong; raised before any side effect."""


class StateKeyError(ConfigurationError, ValueError):
    """A state key breaks the naming rules (see adk_core.state.validate_state_key)."""


class InvalidInputError(AdkError, ValueError):
    """Run-time data that cannot be used as given; nothing was written."""


class SessionError(AdkError):
    """A session store operation could not be carried out."""


class SessionNotFoundError(SessionError, LookupError):
    """The session named does not exist."""


class AlreadyExistsError(SessionError):
    """An id that must be unique is already taken."""


class EventConflictError(SessionError):
    """An event id is already stored in the session with different content. Appending the same
    content again is an idempotent repeat (a retried activity); different content under the same id
    would otherwise be dropped silently. Nothing of the append was written.

    Attributes:
        event_id: the id in conflict.
    """

    def __init__(self, message: str, *, event_id: str) -> None:
        super().__init__(message)
        self.event_id = event_id

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (and copies) with its keyword argument
        return (_rebuild_conflict, (str(self), self.event_id))


def _rebuild_conflict(message: str, event_id: str) -> EventConflictError:
    return EventConflictError(message, event_id=event_id)


class ModelError(AdkError):
    """A model provider call failed.

    Attributes:
        status: HTTP status, or None for transport failures.
        retryable: whether the same request may succeed later (408/409/429/5xx, network errors).
        retry_after: seconds the provider asked us to wait, if it said.
        provider: short provider name, e.g. "gemini".
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        provider: str = "",
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.provider = provider
        self.error_type = error_type


class ToolError(AdkError):
    """A tool problem that must stop the run (not one the model can recover from)."""


class LlmCallsLimitExceededError(AdkError):
    """The invocation made more model calls than RunConfig.max_llm_calls allows."""


class OutputValidationError(AdkError, ValueError):
    """A model response did not validate against the agent's output_schema."""


class UnsupportedOperationError(AdkError, NotImplementedError):
    """A service method this service cannot offer where it was called, e.g. ``list_sessions`` from
    workflow code. An AdkError, so a durable run fails the turn with the message (which says what to
    call instead) rather than retrying its workflow task; a NotImplementedError for code that
    already catches that."""


class EvalToolError(AdkError):
    """An eval case's system called a tool that is neither mocked nor passed through
    (``EvalCase.tool_mocks``); nothing ran. The message says how to add either."""


class EvalUserAgentError(AdkError):
    """An eval case's system yielded on a tool (a long-running or confirmation call) that no
    user agent answers (``UserAgents.tools``). The message says how to add one."""


class RemoteError(AdkError):
    """An exception raised where the engine could not catch it directly (e.g. in a Temporal
    activity), carried back as data: its type name, message, class path and args.

    The engine hands on_tool_error callbacks ``rebuilt(...)``, the original class again where it
    can be found; a RemoteError reaches them only when it cannot.
    """

    def __init__(
        self, message: str, *, error_type: str, error_class: str | None = None, error_args: list[Any] | None = None
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error_class = error_class
        """``module:qualname`` of the original class (``error_class_path``), when known."""
        self.error_args = error_args
        """The original's args, when they are plain JSON (``portable_args``)."""

    def rebuilt(self, near: Iterable[object] = ()) -> Exception:
        """The original exception as an instance of its own class, where that is safe; else self.

        The class is looked for only where the code around the failing call can name it: in
        builtins, in adk_core's errors, and in the modules that define the objects in ``near``
        (the tool, the callbacks that will see the error), by what those modules define or
        import. Nothing is imported, and the answer depends on the app's code alone, not on what
        a worker process happened to load: this runs inside workflows and must come out the same
        on every worker and every replay. A callback that tests ``isinstance(error, SomeError)``
        names ``SomeError`` in its module, so it gets the real class.

        The instance is made from the original's args (or its message) and must print as the
        original did; otherwise (a class defined inside a function, a constructor that wants other
        arguments or rewords its message) this RemoteError is returned. Attributes the original
        set besides its args are not carried.
        """
        found = _find_exception_class(self.error_class, near)
        if found is None:
            return self
        message = str(self)
        try:
            error = found(*self.error_args) if self.error_args is not None else found(message)
        except Exception:
            return self
        return error if str(error) == message else self


def error_type_name(error: BaseException) -> str:
    return error.error_type if isinstance(error, RemoteError) else type(error).__name__


def error_class_path(error: BaseException) -> str:
    """``module:qualname`` of the error's class, as ``RemoteError.rebuilt`` looks it up."""
    cls = type(error)
    return f"{cls.__module__}:{cls.__qualname__}"


def portable_args(error: BaseException) -> list[Any] | None:
    """The error's args if they survive a JSON round trip unchanged, else None."""
    args = list(error.args)
    try:
        return args if json.loads(json.dumps(args)) == args else None
    except (TypeError, ValueError):
        return None


def _find_exception_class(path: str | None, near: Iterable[object]) -> type[Exception] | None:
    module_name, _, qualname = (path or "").partition(":")
    if not module_name or not qualname:
        return None
    namespaces = [vars(builtins), globals(), *(ns for obj in near for ns in _namespaces_of(obj))]
    for namespace in namespaces:
        found = _find_in(namespace, module_name, qualname)
        if found is not None:
            return found
    return None


def _find_in(namespace: dict[str, Any], module_name: str, qualname: str) -> type[Exception] | None:
    if namespace.get("__name__") == module_name:
        return _exception_class(_walk(namespace.get(qualname.split(".")[0]), qualname.split(".")[1:]))
    for value in list(namespace.values()):
        if isinstance(value, type) and value.__module__ == module_name and value.__qualname__ == qualname:
            return _exception_class(value)  # imported by name: ``from shop.errors import OutOfStock``
        if isinstance(value, types.ModuleType) and (module_name + ".").startswith(value.__name__ + "."):
            # An imported module or a package above it: ``import shop`` reaches ``shop.errors``.
            module = _walk(value, module_name.split(".")[value.__name__.count(".") + 1 :])
            if isinstance(module, types.ModuleType) and module.__name__ == module_name:
                return _exception_class(_walk(module, qualname.split(".")))
    return None


def _walk(obj: Any, names: list[str]) -> Any:
    for name in names:
        obj = getattr(obj, name, None)
    return obj


def _exception_class(obj: Any) -> type[Exception] | None:
    return obj if isinstance(obj, type) and issubclass(obj, Exception) else None


def _namespaces_of(obj: object) -> list[dict[str, Any]]:
    """The module namespaces a function, method, FunctionTool-like wrapper or instance comes from."""
    found: list[dict[str, Any]] = []
    for candidate in (obj, getattr(obj, "__func__", None), getattr(obj, "func", None), getattr(obj, "__wrapped__", None)):
        namespace = getattr(candidate, "__globals__", None)
        if isinstance(namespace, dict):
            found.append(namespace)
    if not found and not isinstance(obj, type):
        # An instance (a tool or plugin class, a callable object): the module of its class's methods.
        found += [f.__globals__ for f in vars(type(obj)).values() if isinstance(f, types.FunctionType)][:1]
    return found
