"""The LLM flow: request processors, the model/tool loop, and tool dispatch."""

from .contents import build_contents, event_to_content
from .llm_flow import build_request, run_llm_flow
from .resolved_context import ResolvedContext, resolve_context

__all__ = ["ResolvedContext", "build_contents", "build_request", "event_to_content", "resolve_context", "run_llm_flow"]
