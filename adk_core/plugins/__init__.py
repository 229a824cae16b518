"""Plugins: hooks over the whole run, before agent callbacks."""

from .base import BasePlugin
from .manager import PluginManager

__all__ = ["BasePlugin", "PluginManager"]
