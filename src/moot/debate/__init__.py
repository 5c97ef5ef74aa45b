"""The debate engine: one round loop, protocols as data.

Its names are imported when first used (``moot.lazy``): importing one module of the package (a store
reading ``moot.debate.records``) loads no other."""

from typing import TYPE_CHECKING

from moot.lazy import lazy_exports

if TYPE_CHECKING:
    from moot.debate.agents import Agent, AgentSpec, Sampling
    from moot.debate.components.history import HISTORY_MODE
    from moot.debate.engine import ROUND_CONVENTION, run_debate
    from moot.debate.protocol_presets import PRESETS, resolve_protocol
    from moot.debate.protocols import ProtocolSpec, TieRule
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("Agent", "AgentSpec", "Sampling"), "moot.debate.agents"),
        "HISTORY_MODE": "moot.debate.components.history",
        **dict.fromkeys(("ROUND_CONVENTION", "run_debate"), "moot.debate.engine"),
        **dict.fromkeys(("PRESETS", "resolve_protocol"), "moot.debate.protocol_presets"),
        **dict.fromkeys(("ProtocolSpec", "TieRule"), "moot.debate.protocols"),
        **dict.fromkeys(("DebateResult", "FinalStatus", "RoundRecord", "Turn", "Vote"), "moot.debate.records"),
    },
)
