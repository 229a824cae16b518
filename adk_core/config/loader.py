"""Building agents from config files: YAML -> validated AgentConfig -> agents, tools bound by name."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from ..agents.base import BaseAgent, validate_agent_name
from ..agents.llm_agent import LlmAgent
from ..agents.workflow_agents import LoopAgent, ParallelAgent, SequentialAgent
from ..app import App
from ..errors import ConfigurationError
from ..models.base import Model
from ..tools.registry import ToolRegistry, bind_tools
from ._yaml import AgentConfigError, FieldPath, YamlDocument, read_yaml
from .schema import LLM_ONLY_FIELDS, AgentConfig, AgentRef

_WORKFLOW_CLASSES: dict[str, type[BaseAgent]] = {
    "SequentialAgent": SequentialAgent,
    "ParallelAgent": ParallelAgent,
    "LoopAgent": LoopAgent,
}
_CALLBACKS = ("before_agent", "after_agent", "before_model", "after_model", "before_tool", "after_tool")


def load_agent_config(path: str | Path, *, tool_registry: ToolRegistry | None = None) -> BaseAgent:
    """Build the agent a config file declares (and its sub-agents).

    References (``package.module:attr``) are imported with the file's import root on ``sys.path``:
    the folder above the outermost package that holds the file, as ``adkt`` does for a .py app.

    Args:
        path: the YAML file.
        tool_registry: where tool names are looked up for agents whose file names no
            ``tool_registry`` of its own (nor inherits one).

    Raises:
        AgentConfigError: the file, the line and the field that is wrong, and how to fix it.
    """
    return _load_file(Path(path).resolve(), tool_registry, chain=())


def load_config_app(path: str | Path, *, tool_registry: ToolRegistry | None = None) -> App:
    """An App named after the root agent of the config file at ``path`` (see load_agent_config)."""
    root = load_agent_config(path, tool_registry=tool_registry)
    return App(name=root.name, root_agent=root)


def _load_file(file: Path, registry: ToolRegistry | None, chain: tuple[Path, ...]) -> BaseAgent:
    if file in chain:
        cycle = " -> ".join(str(f) for f in (*chain, file))
        raise AgentConfigError(chain[-1], None, "sub_agents", f"config files include each other ({cycle}); break the cycle")
    doc = read_yaml(file)
    _put_import_root_on_path(file.parent)
    return _build(doc, doc.data, (), registry, (*chain, file))


def _build(
    doc: YamlDocument, data: dict[str, Any], at: FieldPath, registry: ToolRegistry | None, chain: tuple[Path, ...]
) -> BaseAgent:
    config = _validate(doc, AgentConfig, data, at)
    if config.tool_registry is not None:
        registry = _registry(doc, config.tool_registry, (*at, "tool_registry"))
    _check_fields(doc, config, at, registry)
    subs = [_sub_agent(doc, item, (*at, "sub_agents", i), registry, chain) for i, item in enumerate(config.sub_agents)]
    try:
        execution = config.execution.build() if config.execution else None
    except ConfigurationError as e:
        raise doc.error((*at, "execution"), str(e)) from None
    common: dict[str, Any] = {"name": config.name, "description": config.description, "sub_agents": subs,
                              "execution": execution}  # fmt: skip
    for kind in ("before_agent", "after_agent"):
        common[f"{kind}_callback"] = _callbacks(doc, config, kind, at)
    try:
        if config.agent_class in _WORKFLOW_CLASSES:
            _refuse_llm_fields(doc, data, at, config.agent_class)
            if config.agent_class == "LoopAgent":
                return LoopAgent(max_iterations=config.max_iterations, **common)
            if config.max_iterations is not None:
                raise doc.error((*at, "max_iterations"),
                                f"a {config.agent_class} takes no max_iterations; remove it or set agent_class: LoopAgent")
            return _WORKFLOW_CLASSES[config.agent_class](**common)
        if config.max_iterations is not None:
            raise doc.error((*at, "max_iterations"), "only a LoopAgent takes max_iterations; remove it or set agent_class: LoopAgent")
        model_callbacks: dict[str, Any] = {f"{k}_callback": _callbacks(doc, config, k, at) for k in _CALLBACKS[2:]}
        return LlmAgent(
            model=_model(doc, config.model, (*at, "model")),
            instruction=config.instruction,
            global_instruction=config.global_instruction,
            tools=list(config.tools),
            tool_registry=registry,
            tool_validation=config.tool_validation,
            generate_content_config=config.generate_content_config,
            output_key=config.output_key,
            include_contents=config.include_contents,
            disallow_transfer_to_parent=config.disallow_transfer_to_parent,
            disallow_transfer_to_peers=config.disallow_transfer_to_peers,
            **model_callbacks,
            **common,
        )
    except AgentConfigError:
        raise
    except ConfigurationError as e:  # what the agent itself refuses (e.g. two sub-agents of one name)
        raise doc.error(at, str(e)) from None


def _check_fields(doc: YamlDocument, config: AgentConfig, at: FieldPath, registry: ToolRegistry | None) -> None:
    """Check the name and each tool name on their own, so an error points at the line that is wrong (the
    agent binds its tools again when built: the same registry entries, at the cost of a second lookup)."""
    try:
        validate_agent_name(config.name)
    except ConfigurationError as e:
        raise doc.error((*at, "name"), str(e)) from None
    if config.tool_validation != "strict":
        return
    for i, ref in enumerate(config.tools):
        try:
            bind_tools([ref], registry=registry, agent_name=config.name)
        except ConfigurationError as e:
            raise doc.error((*at, "tools", i), str(e)) from None


def _validate(doc: YamlDocument, model: type[Any], data: Any, at: FieldPath) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = (*at, *first["loc"])
        problem = first["msg"]
        if first["type"] == "extra_forbidden":
            owner = _model_at(model, first["loc"][:-1])
            known = f"; the fields are: {', '.join(owner.model_fields)}" if owner is not None else ""
            problem = f"unknown field{known}"
        elif first["type"] == "missing":
            problem = "required field is missing; add it"
        elif first["type"] == "literal_error":
            problem = f"{first['msg']} (got {first.get('input')!r})"
        more = f" ({e.error_count() - 1} more problem(s) in this agent after this one)" if e.error_count() > 1 else ""
        raise doc.error(loc, problem + more) from None


def _model_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The pydantic model that holds the field at ``loc`` inside ``model`` (None if not a model)."""
    for part in loc:
        if not isinstance(part, str) or part not in model.model_fields:
            return None
        found = next((a for a in (model.model_fields[part].annotation, *get_args(model.model_fields[part].annotation))
                      if isinstance(a, type) and issubclass(a, BaseModel)), None)  # fmt: skip
        if found is None:
            return None
        model = found
    return model


def _sub_agent(
    doc: YamlDocument, item: dict[str, Any], at: FieldPath, registry: ToolRegistry | None, chain: tuple[Path, ...]
) -> BaseAgent:
    if "config_path" not in item and "code" not in item:
        return _build(doc, item, at, registry, chain)  # inline
    ref = _validate(doc, AgentRef, item, at)
    if ref.config_path is not None:
        file = (doc.file.parent / ref.config_path).resolve()
        if not file.is_file():
            raise doc.error((*at, "config_path"), f"no file {file}; the path is relative to {doc.file.parent}")
        return _load_file(file, registry, chain)
    value = _import(doc, ref.code, (*at, "code"))
    if not isinstance(value, BaseAgent):
        raise doc.error((*at, "code"), f"{ref.code!r} is a {type(value).__name__}, not an agent; name an agent object")
    return value


def _refuse_llm_fields(doc: YamlDocument, data: dict[str, Any], at: FieldPath, agent_class: str) -> None:
    for field in LLM_ONLY_FIELDS:
        if field in data:
            raise doc.error(
                (*at, field), f"a {agent_class} does not take {field!r}; move it to an LlmAgent sub-agent or remove it"
            )


def _model(doc: YamlDocument, text: str, at: FieldPath) -> str | Model:
    if ":" not in text:
        return text  # a model name: resolved by the model registry when the agent first runs
    value = _import(doc, text, at)
    if not isinstance(value, str | Model):
        raise doc.error(at, f"{text!r} is a {type(value).__name__}; it must hold a Model or a model name")
    return value


def _registry(doc: YamlDocument, text: str, at: FieldPath) -> ToolRegistry:
    value = _import(doc, text, at)
    if not isinstance(value, ToolRegistry):
        raise doc.error(at, f"{text!r} is a {type(value).__name__}, not a ToolRegistry")
    return value


def _callbacks(doc: YamlDocument, config: AgentConfig, kind: str, at: FieldPath) -> list[Any] | None:
    refs: list[str] = getattr(config, f"{kind}_callbacks")
    found = []
    for i, ref in enumerate(refs):
        value = _import(doc, ref, (*at, f"{kind}_callbacks", i))
        if not callable(value):
            raise doc.error((*at, f"{kind}_callbacks", i), f"{ref!r} is not callable")
        found.append(value)
    return found or None


def _import(doc: YamlDocument, text: str, at: FieldPath) -> Any:
    """The object ``package.module:attr`` (or ``package.module.attr``) names."""
    module_name, sep, attr = text.partition(":")
    if not sep:
        module_name, _, attr = text.rpartition(".")
    if not module_name or not attr.isidentifier():
        raise doc.error(at, f"{text!r} is not a reference; write package.module:attr")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise doc.error(
                at, f"no module {e.name!r}; write the module's full dotted name as imported from "
                f"{import_root(doc.file.parent)} (the folder above the config file's outermost package)"
            ) from None
        raise doc.error(at, f"importing {module_name!r} failed: {e}") from e
    except Exception as e:
        raise doc.error(at, f"importing {module_name!r} failed: {type(e).__name__}: {e}") from e
    if not hasattr(module, attr):
        raise doc.error(at, f"module {module_name!r} has no {attr!r}")
    return getattr(module, attr)


def import_root(folder: Path) -> Path:
    """The folder above the outermost package that holds ``folder`` (``folder`` itself if it is no package)."""
    folder = folder.resolve()
    while (folder / "__init__.py").is_file():
        folder = folder.parent
    return folder


def _put_import_root_on_path(folder: Path) -> None:
    root = str(import_root(folder))
    if root not in sys.path:
        sys.path.insert(0, root)
