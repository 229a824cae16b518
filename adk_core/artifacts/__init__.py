"""Artifact services. The Postgres one lives in ``adk_core.artifacts.sql`` (needs SQLAlchemy)."""

from .base import ArtifactService, validate_filename
from .in_memory import InMemoryArtifactService

__all__ = ["ArtifactService", "InMemoryArtifactService", "validate_filename"]
