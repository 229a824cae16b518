"""Temporal activities: model calls, tool calls, session commits and loads, artifacts, memory."""

from .adk_activities import AdkActivities, model_error_to_application_error
from .apps import get_agent, get_app, register_app, registered_apps
from .contracts import ACTIVITY_NAMES

__all__ = [
    "ACTIVITY_NAMES",
    "AdkActivities",
    "get_agent",
    "get_app",
    "model_error_to_application_error",
    "register_app",
    "registered_apps",
]
