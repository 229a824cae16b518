"""`adkt dev --reload`: notice when an app's source files change, and import the apps afresh.

A polling watcher of modification times: no dependency, and an app folder is a handful of files,
so a scan every half second costs nothing. The folders watched are those of the apps' own modules
(examples/ for examples.support_desk, my_bot/ for my_bot/agent.py), recursively.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

POLL_SECONDS = 0.5
SETTLE_SECONDS = 0.3
"""An editor's save can be several writes; wait this long after a change before reloading."""
SKIPPED = {"__pycache__", ".adk", ".venv", "venv", ".git", "node_modules"}
WATCHED_SUFFIXES = (".py", ".yaml", ".yml")
"""Python files and agent config files (adk_core.config)."""


class SourceWatcher:
    """Polls the .py files under some folders; `changed()` returns once any was added, removed or edited."""

    def __init__(self, folders: Iterable[Path]) -> None:
        self.folders = sorted({folder.resolve() for folder in folders})
        self._seen = self._scan()

    def _scan(self) -> dict[Path, int]:
        found: dict[Path, int] = {}
        for folder in self.folders:
            for path in (p for p in folder.rglob("*") if p.suffix in WATCHED_SUFFIXES):
                if SKIPPED.isdisjoint(path.relative_to(folder).parts):
                    try:
                        found[path] = path.stat().st_mtime_ns
                    except FileNotFoundError:  # removed while scanning
                        continue
        return found

    async def changed(self) -> list[Path]:
        """Wait for a change; return the files that changed (sorted)."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            now = self._scan()
            if now != self._seen:
                await asyncio.sleep(SETTLE_SECONDS)
                now = self._scan()
                changed = sorted(p for p in now.keys() | self._seen.keys() if now.get(p) != self._seen.get(p))
                self._seen = now
                return changed


def app_folders(specs: Sequence[str]) -> list[Path]:
    """The folders of the modules the app specs name (loaded already)."""
    from adkt.commands._apps import parse_app_spec

    folders = set()
    for spec in specs:
        parsed = parse_app_spec(spec)
        if parsed.config_file is not None:  # an agent config: its folder (the YAML and the code it names)
            folders.add(parsed.config_file.resolve().parent)
            continue
        module = sys.modules.get(parsed.module or "")
        file = getattr(module, "__file__", None)
        if file:
            folders.add(Path(file).resolve().parent)
    return sorted(folders)


def forget_modules(folders: Sequence[Path]) -> list[str]:
    """Drop the modules loaded from `folders` from sys.modules, so the next import reads the files again."""
    roots = [folder.resolve() for folder in folders]
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and any(_project_source(Path(file).resolve(), root) for root in roots):
            del sys.modules[name]
            dropped.append(name)
    return dropped


def _project_source(file: Path, root: Path) -> bool:
    """Whether ``file`` is the project's own code under ``root``: not an installed package in a venv
    beside the app (dropping adk_core or a library would load a second copy beside the running one)."""
    if not file.is_relative_to(root):
        return False
    parts = file.relative_to(root).parts
    return SKIPPED.isdisjoint(parts) and not {"site-packages", "dist-packages"} & set(parts)
