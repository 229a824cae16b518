"""Reading a YAML file with the line of every field, so an error can say where it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # no stubs: types-PyYAML would be a dependency for one module

from ..errors import ConfigurationError

FieldPath = tuple[str | int, ...]


class AgentConfigError(ConfigurationError):
    """An agent config file is wrong; the message names the file, the line and the field, and a fix.

    Attributes:
        file: the config file.
        line: 1-based line of the field (None when the file cannot be read at all).
        field: the field's path, e.g. ``sub_agents[0].model`` ('' for the whole file).
    """

    def __init__(self, file: Path, line: int | None, field: str, problem: str) -> None:
        where = f"{file}:{line}" if line is not None else str(file)
        super().__init__(f"{where}: {field + ': ' if field else ''}{problem}")
        self.file = file
        self.line = line
        self.field = field


class YamlDocument:
    """A parsed YAML mapping and the 1-based line of each field path in it."""

    def __init__(self, file: Path, data: dict[str, Any], lines: dict[FieldPath, int]) -> None:
        self.file = file
        self.data = data
        self._lines = lines

    def line(self, path: FieldPath) -> int:
        """The line of ``path``, else of its nearest enclosing field (the document's first line at worst)."""
        while path and path not in self._lines:
            path = path[:-1]
        return self._lines.get(path, 1)

    def error(self, path: FieldPath, problem: str) -> AgentConfigError:
        return AgentConfigError(self.file, self.line(path), field_name(path), problem)


def read_yaml(file: Path) -> YamlDocument:
    """Parse ``file``; it must hold one mapping.

    Raises:
        AgentConfigError: the file is missing, is not valid YAML (with the line of the problem), or
            is not a mapping.
    """
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as e:
        raise AgentConfigError(file, None, "", f"cannot read the agent config ({e.strerror or e}); check the path") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(str(p) for p in (e.context, e.problem) if p)
        raise AgentConfigError(file, line, "", f"not valid YAML ({problem}); fix the syntax on that line") from None
    except yaml.YAMLError as e:
        raise AgentConfigError(file, None, "", f"not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise AgentConfigError(
            file, 1, "", "an agent config must be a mapping of fields (name: ..., model: ..., instruction: ...); "
            f"this file holds {type(data).__name__ if data is not None else 'nothing'}"
        )
    lines: dict[FieldPath, int] = {}
    _collect_lines(file, node, (), lines)
    return YamlDocument(file, data, lines)


def _collect_lines(file: Path, node: yaml.Node | None, path: FieldPath, lines: dict[FieldPath, int]) -> None:
    if node is None:
        return
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, str(key.value))
            line = key.start_mark.line + 1
            if child in lines:
                # YAML keeps the last of a repeated key without a word: the agent would silently not be
                # the one the file's first value declares.
                raise AgentConfigError(file, line, field_name(child), f"given twice (also on line {lines[child]}); keep one")
            lines[child] = line
            _collect_lines(file, value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_lines(file, item, (*path, index), lines)


def field_name(path: FieldPath) -> str:
    """``('sub_agents', 0, 'model')`` as ``sub_agents[0].model``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
