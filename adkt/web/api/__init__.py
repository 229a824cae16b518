"""The HTTP API under /api/v1: sessions, messages (JSON or SSE), pending requests, apps, eval runs.

One route table (endpoints.ENDPOINTS) drives both the dispatcher and the OpenAPI schema
(/api/v1/openapi.json). docs/web.md documents it.
"""

from .backend import ApiBackend
from .endpoints import ENDPOINTS
from .openapi import openapi_schema

__all__ = ["ENDPOINTS", "ApiBackend", "openapi_schema"]
