"""The MCP server of examples/mcp_tools.py: a small stock, built with the mcp package's FastMCP.

    python -m examples.mcp_inventory_server      # speaks MCP on stdin/stdout

``reserve`` reads the caller's idempotency key from the request's ``_meta`` and reserves once per
key: a call repeated by a durable run (its worker died after the server answered) gets the first
answer back instead of reserving twice.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP

IDEMPOTENCY_META_KEY = "adk-temporal/idempotency-key"  # what McpToolset sends (adk_core.tools.mcp)

server = FastMCP("inventory")
units = {"SKU-7": 5}
reservations: dict[str, dict] = {}  # by idempotency key


@server.tool()
def stock(sku: str) -> int:
    """Units of ``sku`` in stock."""
    return units.get(sku, 0)


@server.tool()
def reserve(sku: str, quantity: int, ctx: Context) -> dict:
    """Reserve ``quantity`` units of ``sku``."""
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get(IDEMPOTENCY_META_KEY) if meta else None
    if key in reservations:
        return reservations[key]
    if units.get(sku, 0) < quantity:
        raise ValueError(f"only {units.get(sku, 0)} of {sku} left")
    units[sku] -= quantity
    reservation = {"sku": sku, "quantity": quantity, "left": units[sku]}
    if key:
        reservations[key] = reservation
    return reservation


@server.tool()
def restock(sku: str, quantity: int) -> int:
    """Add units (operators only)."""
    units[sku] = units.get(sku, 0) + quantity
    return units[sku]


if __name__ == "__main__":
    server.run(transport="stdio")
