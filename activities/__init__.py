"""Temporal activities: model calls, tool calls, session commits and loads, artifacts, memory."""

from .adk_activities import AdkActivities, model_error_to_application_error
from .apps import AppRegistry
from .contracts import ACTIVITY_NAMES

__all__ = [
    "ACTIVITY_NAMES",
    "AdkActivities",
    "AppRegistry",
    "model_error_to_application_error",
]
