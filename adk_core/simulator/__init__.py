"""The agent simulator: a person answers an agent's model requests, as if they were the model.

``SimulatorPlugin`` turns the model requests of chosen agents into pending requests of a
simulator session; ``SimulatorService`` applies the seed's rules between the agents that ask and
the person who answers (through the web app, ``adkt sim``); the stores keep sessions and events
in memory or in Postgres (``adk_core.simulator.sql``).
"""

from .errors import (
    AskerGoneError,
    NotHeadOfQueueError,
    SessionCompletedError,
    SimulatorConflictError,
    SimulatorDeliveryTimeoutError,
    SimulatorError,
    SimulatorInputError,
    SimulatorNotFoundError,
    TurnAlreadyAnsweredError,
)
from .export import (
    RecordedToolCall,
    SimulatorExport,
    SimulatorReplayPlugin,
    eval_case,
    export_events,
    export_session,
    export_view,
)
from .models import (
    Decision,
    FunctionCallDecision,
    ReplyTo,
    SessionEvent,
    SessionSummary,
    SessionView,
    SimulatorSession,
    Turn,
    request_payload,
    to_llm_response,
)
from .plugin import WAIT_KIND, LocalChannel, SimulatorAsk, SimulatorChannel, SimulatorPlugin
from .service import Deliver, SimulatorService
from .store import InMemorySimulatorStore, SimulatorStore

__all__ = [
    "WAIT_KIND",
    "AskerGoneError",
    "Decision",
    "Deliver",
    "FunctionCallDecision",
    "InMemorySimulatorStore",
    "LocalChannel",
    "NotHeadOfQueueError",
    "ReplyTo",
    "SessionCompletedError",
    "SessionEvent",
    "SessionSummary",
    "SessionView",
    "SimulatorAsk",
    "SimulatorChannel",
    "SimulatorConflictError",
    "SimulatorDeliveryTimeoutError",
    "SimulatorError",
    "SimulatorInputError",
    "SimulatorNotFoundError",
    "SimulatorPlugin",
    "SimulatorService",
    "SimulatorSession",
    "SimulatorStore",
    "RecordedToolCall",
    "SimulatorExport",
    "SimulatorReplayPlugin",
    "Turn",
    "TurnAlreadyAnsweredError",
    "eval_case",
    "export_events",
    "export_session",
    "export_view",
    "request_payload",
    "to_llm_response",
]
