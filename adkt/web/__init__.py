"""The one web app: the simulator's pages and its JSON/SSE API (``adkt sim``)."""
