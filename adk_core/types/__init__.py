"""Data types that cross every boundary: content, parts and events (pydantic v2, JSON round-trip stable)."""

from .content import MAX_INLINE_DATA_SIZE, Blob, Content, FileData, FunctionCall, FunctionResponse, Part
from .event import (
    REQUEST_CONFIRMATION_FUNCTION,
    Event,
    EventActions,
    EventCompaction,
    ToolConfirmation,
)

__all__ = [
    "MAX_INLINE_DATA_SIZE",
    "REQUEST_CONFIRMATION_FUNCTION",
    "Blob",
    "Content",
    "Event",
    "EventActions",
    "EventCompaction",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "Part",
    "ToolConfirmation",
]
