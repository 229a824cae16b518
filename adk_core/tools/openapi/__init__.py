"""Tools from an OpenAPI 3.x document: each operation a tool, each call an HTTP request."""

from ._auth import ApiKeyAuth, Auth, BearerAuth, OAuth2ClientCredentials
from ._errors import OpenApiCallError, OpenApiUnavailableError
from .toolset import DEFAULT_EXECUTION, IDEMPOTENCY_HEADER, OpenApiToolset, RestApiTool

__all__ = [
    "DEFAULT_EXECUTION",
    "IDEMPOTENCY_HEADER",
    "ApiKeyAuth",
    "Auth",
    "BearerAuth",
    "OAuth2ClientCredentials",
    "OpenApiCallError",
    "OpenApiToolset",
    "OpenApiUnavailableError",
    "RestApiTool",
]
