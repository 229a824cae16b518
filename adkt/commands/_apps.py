"""Which app a command means, and loading it.

An app can be named four ways:

    examples.support_desk:app        module:attr, relative to the current directory
    examples/support_desk.py         a file; the attribute is `app`, else `root_agent` (as google-adk does)
    examples/support_desk.py:app     a file and the attribute
    my_agent/                        a folder: its agent.py (google-adk's layout), else its root_agent.yaml,
                                     else its __init__.py
    my_agent/root_agent.yaml         an agent config file (adk_core.config); the App is named after its root agent

A file is imported under its package's dotted name (examples/support_desk.py is
`examples.support_desk`, found from the folder above its outermost package), so the app a worker
loads from a file is the same module as the one loaded by `module:attr`.

Anything else (`support_desk`) that is neither a module nor a path is the name of an app that a
running worker serves.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adk_core import App

DEFAULT_ATTRS = ("app", "root_agent")
"""Looked for, in this order, when a spec names no attribute (google-adk's convention is root_agent)."""


@dataclass(frozen=True)
class AppSpec:
    """A parsed app spec.

    Attributes:
        text: as the user wrote it (repeated in hints, so they can paste it back).
        module: the module to import; None when `text` is only an app name.
        attr: the attribute holding the App or root agent; None means the first of DEFAULT_ATTRS.
        search_path: a folder to put on sys.path first, for a file outside the current directory.
        config_file: an agent config file (YAML) to build the app from, instead of a module.
    """

    text: str
    module: str | None
    attr: str | None = None
    search_path: Path | None = None
    config_file: Path | None = None

    @property
    def loadable(self) -> bool:
        return self.module is not None or self.config_file is not None


def parse_app_spec(text: str) -> AppSpec:
    """Tell a module, a file or a folder from a bare app name; check that what it names exists."""
    from adk_core.errors import ConfigurationError

    target, sep, attr = text.partition(":")
    config = _config_file(Path(target), text) if _looks_like_path(target) else None
    if config is not None:
        if sep:
            raise ConfigurationError(f"app {text!r}: a config file holds one root agent; drop {':' + attr!r}")
        return AppSpec(text, None, config_file=config)
    if sep and not attr.isidentifier():
        raise ConfigurationError(f"app {text!r}: {attr!r} after ':' is not a Python name; write e.g. {target}:app")
    if _looks_like_path(target):
        module, search_path = _module_of_path(Path(target), text)
        return AppSpec(text, module, attr or None, search_path)
    if not all(part.isidentifier() for part in target.split(".")):
        raise ConfigurationError(
            f"app {text!r} is neither a module (pkg.module:app), a .py file nor a folder; check the spelling"
        )
    if sep or _module_exists(target):
        return AppSpec(text, target, attr or None)
    return AppSpec(text, None)


def load_app(spec: AppSpec | str) -> App:
    """Import the spec's module and return its App (a root agent becomes an App named after it).

    Raises:
        ConfigurationError: the spec names nothing loadable; the message says what to write instead.
    """
    from adk_core.errors import ConfigurationError
    from adk_temporal.worker import load_app as load_module_attr

    spec = parse_app_spec(spec) if isinstance(spec, str) else spec
    if spec.config_file is not None:
        from adk_core.config import load_config_app

        return load_config_app(spec.config_file)
    if spec.module is None:
        raise ConfigurationError(
            f"{spec.text!r} is not a module or a file here, so it can only name an app that a running worker serves; "
            f"to serve it from this command, name its file (e.g. my_app/agent.py) or module:attr (e.g. examples.w1:app)"
        )
    if spec.search_path is not None and str(spec.search_path) not in sys.path:
        sys.path.insert(0, str(spec.search_path))
    try:
        module = importlib.import_module(spec.module)
    except ModuleNotFoundError as e:
        if e.name and spec.module.startswith(e.name):
            raise ConfigurationError(
                f"cannot load app {spec.text!r}: no module {e.name!r} here ({Path.cwd()}); run adkt from the folder "
                "that contains it, or name the app by its file path"
            ) from None
        raise ConfigurationError(f"cannot load app {spec.text!r}: importing it failed: {_where(e)}") from e
    except Exception as e:  # the app's own module raised while importing: show where
        raise ConfigurationError(f"cannot load app {spec.text!r}: importing it failed: {_where(e)}") from e
    if spec.attr is not None and not hasattr(module, spec.attr):
        raise ConfigurationError(
            f"cannot load app {spec.text!r}: {module.__name__} has no {spec.attr!r}; name the App or agent it defines"
        )
    attr = spec.attr or next((name for name in DEFAULT_ATTRS if hasattr(module, name)), None)
    if attr is None:
        raise ConfigurationError(
            f"{spec.text!r} defines neither `app` nor `root_agent`; name the one to run, e.g. {spec.text}:my_agent"
        )
    return load_module_attr(f"{spec.module}:{attr}")


def _looks_like_path(target: str) -> bool:
    return target.endswith((".py", ".yaml", ".yml")) or "/" in target or "\\" in target or Path(target).is_dir()


def _config_file(path: Path, text: str) -> Path | None:
    """The agent config file ``path`` names: itself (.yaml/.yml), or a folder's root_agent.yaml when the
    folder has no agent.py (google-adk's layout for a config-based agent)."""
    from adk_core.config import CONFIG_SUFFIXES
    from adk_core.errors import ConfigurationError

    if path.suffix in CONFIG_SUFFIXES:
        if not path.is_file():
            raise ConfigurationError(f"app {text!r}: no such file ({path.absolute()})")
        return path
    if path.is_dir() and not (path / "agent.py").is_file():
        found = next((path / f"root_agent{s}" for s in CONFIG_SUFFIXES if (path / f"root_agent{s}").is_file()), None)
        return found
    return None


def _module_of_path(path: Path, text: str) -> tuple[str, Path]:
    """The dotted module name of a .py file (or folder) and the folder it is importable from."""
    from adk_core.errors import ConfigurationError

    if path.is_dir():
        candidates = [path / "agent.py", path / "__init__.py"]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise ConfigurationError(
                f"app {text!r}: the folder has no agent.py, root_agent.yaml or __init__.py to load the app from"
            )
        path = found
    elif not path.is_file():
        raise ConfigurationError(f"app {text!r}: no such file ({path.absolute()})")
    elif path.suffix != ".py":
        raise ConfigurationError(
            f"app {text!r}: not a Python file or an agent config; name a .py or .yaml file, a folder or module:attr"
        )
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not all(part.isidentifier() for part in parts):
        raise ConfigurationError(
            f"app {text!r}: {'.'.join(parts)!r} is not an importable module name; rename files and folders to "
            "Python names (letters, digits, underscores)"
        )
    return ".".join(parts), folder


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that is missing or fails to import
        return False


def _where(error: BaseException) -> str:
    """`Type: message (file:line)` of the innermost frame that raised, for an import error."""
    frames = traceback.extract_tb(error.__traceback__)
    user_frames = [f for f in frames if "importlib" not in f.filename]
    location = f" ({user_frames[-1].filename}:{user_frames[-1].lineno})" if user_frames else ""
    return f"{type(error).__name__}: {error}{location}"
