"""The debate engine: one round loop, protocols as data."""

from moot.debate.agents import Agent, AgentSpec, Sampling
from moot.debate.components.history import HISTORY_MODE
from moot.debate.engine import ROUND_CONVENTION, run_debate
from moot.debate.protocols import PRESETS, ProtocolSpec, TieRule, resolve_protocol
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, Turn, Vote

__all__ = [
    "HISTORY_MODE",
    "PRESETS",
    "ROUND_CONVENTION",
    "Agent",
    "AgentSpec",
    "DebateResult",
    "FinalStatus",
    "ProtocolSpec",
    "RoundRecord",
    "Sampling",
    "TieRule",
    "Turn",
    "Vote",
    "resolve_protocol",
    "run_debate",
]
