"""The custom search attributes ADK workflows carry: find conversations and runs by app and user.

    temporal workflow list --query "AdkApp='shop' AND AdkUser='u1'"

AdkClient sets them when it starts a SessionWorkflow or an AgentRunWorkflow; child workflows get
their parent's. A namespace must have them registered first (Temporal refuses to start a workflow
carrying an unknown attribute): the embedded dev server registers them itself, docker-compose.yml
runs `temporal operator search-attribute create` once, and a server of your own needs that command
(MISSING_HINT says which). See docs/temporal-cli.md.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import ConfigurationError

ADK_APP = SearchAttributeKey.for_keyword("AdkApp")
ADK_USER = SearchAttributeKey.for_keyword("AdkUser")
ADK_SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[str], ...] = (ADK_APP, ADK_USER)
"""Both are Keyword: exact match, which is what a lookup by app or user id wants."""


class SearchAttributesMissingError(ConfigurationError):
    """The Temporal namespace has no AdkApp / AdkUser search attributes; the message gives the
    command that registers them."""


def adk_search_attributes(app_name: str, user_id: str) -> TypedSearchAttributes:
    """The attributes a workflow of (app, user) starts with."""
    return TypedSearchAttributes([SearchAttributePair(ADK_APP, app_name), SearchAttributePair(ADK_USER, user_id)])


def create_command(namespace: str) -> str:
    """The `temporal` CLI command that registers the ADK search attributes in ``namespace``."""
    names = " ".join(f"--name {key.name} --type Keyword" for key in ADK_SEARCH_ATTRIBUTES)
    return f"temporal operator search-attribute create --namespace {namespace} {names}"


def missing_error(error: BaseException, namespace: str) -> SearchAttributesMissingError | None:
    """The explanation of ``error`` when it is Temporal refusing an unregistered ADK search
    attribute (INVALID_ARGUMENT "... has no mapping defined for search attribute AdkApp"), else None."""
    if not isinstance(error, RPCError) or error.status != RPCStatusCode.INVALID_ARGUMENT:
        return None
    message = str(error)
    if "search attribute" not in message or not any(key.name in message for key in ADK_SEARCH_ATTRIBUTES):
        return None
    return SearchAttributesMissingError(
        f"Temporal refused to start the workflow: {message}. ADK workflows carry the AdkApp and AdkUser "
        f"search attributes (so `temporal workflow list --query \"AdkApp='my_app'\"` finds them); register "
        f"them once per namespace with:\n  {create_command(namespace)}\n"
        "or start without them: AdkClient(client, search_attributes=False)."
    )


async def register(client: Client) -> list[str]:
    """Register the ADK search attributes missing from the client's namespace; returns the names added.

    Needs the operator API (a dev server, or a self-hosted server's admin); Temporal Cloud namespaces
    take them from `tcld namespace search-attributes add` instead.
    """
    service = client.operator_service
    listed = await service.list_search_attributes(ListSearchAttributesRequest(namespace=client.namespace))
    missing = {
        key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
        for key in ADK_SEARCH_ATTRIBUTES
        if key.name not in listed.custom_attributes
    }
    if not missing:
        return []
    try:
        await service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    except RPCError as e:
        if e.status != RPCStatusCode.ALREADY_EXISTS:  # a concurrent registration won: same outcome
            raise
    return sorted(missing)
