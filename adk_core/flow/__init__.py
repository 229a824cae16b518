"""The LLM flow: request processors, the model/tool loop, and tool dispatch."""

from .contents import build_contents, event_to_content
from .llm_flow import build_request, run_llm_flow

__all__ = ["build_contents", "build_request", "event_to_content", "run_llm_flow"]
