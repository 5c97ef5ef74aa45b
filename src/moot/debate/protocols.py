"""Protocols as data: a protocol is a set of component choices; presets name the published ones."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from moot.debate.aggregation import TieRule
from moot.debate.stopping import Stopping
from moot.debate.topology import Topology
from moot.errors import ConfigError


class ProtocolSpec(BaseModel):
    """One protocol, fully resolved.

    ``rounds`` counts round 0 (the independent answers), as Du et al.'s code does:
    ``rounds=2`` is round 0 plus one debate round. With an adaptive ``stopping`` rule it is the cap.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    agents: int = Field(ge=1)
    rounds: int = Field(ge=1)
    topology: Topology = Topology(kind="full")
    history: Literal["chat", "fresh"] = Field(
        default="chat",
        description="chat: each agent keeps its own chat history (Du); fresh: a new single-turn prompt each "
        "round with the question, the agent's last reply and its peers' replies (Choi / DAR)",
    )
    rendering: Literal["du", "grouped"] = Field(
        default="du", description="du: peers' replies one by one; grouped: by answer, with counts"
    )
    style: Literal["peers", "liang"] = Field(
        default="peers",
        description="peers: agents answer simultaneously and hear their peers; liang: an affirmative and a "
        "negative debater speak in turn and a moderator evaluates each round (Liang et al.)",
    )
    initializer: Literal["independent", "diverse"] = Field(
        default="independent",
        description="independent: each agent answers once in round 0; diverse: sample pool_size candidates and "
        "greedily keep the agents-many that add most answer diversity (Zhu et al.)",
    )
    pool_size: int | None = Field(default=None, ge=1, description="diverse: candidates sampled (default 2 x agents)")
    similarity: Literal["jaccard", "embedding"] = Field(
        default="jaccard", description="diverse: text similarity, token Jaccard or MiniLM embeddings (an extra)"
    )
    confidence: bool = Field(
        default=False, description="agents state a 0..confidence_scale confidence, shown to peers (Zhu et al.)"
    )
    confidence_scale: int = Field(default=10, ge=1)
    uncertainty_cue: bool = Field(
        default=False, description="each forwarded reply carries its ANLL (DAR's uncertainty prompt; needs logprobs)"
    )
    vote_cue: bool = Field(default=False, description="agents are told the previous round's majority (the last vote)")
    retention: Literal["all", "dar", "certain", "similar", "perplexity-top", "distinct"] = Field(
        default="all", description="which previous-round replies agents hear (moot.debate.retention)"
    )
    retain_fraction: float = Field(default=0.5, gt=0.0, le=1.0, description="perplexity-top: share kept")
    stopping: Stopping = Stopping()
    aggregation: Literal["majority", "confidence", "judge", "moderator"] = Field(
        default="majority",
        description="majority of the last round; confidence-weighted majority; the last judge's answer; or "
        "(liang) the moderator's answer when it ends the debate, else the final judge's",
    )
    tie_rule: TieRule = "first"
    reference: str = ""
    fixed_agents: bool = Field(default=False, exclude=True)
    fixed_rounds: bool = Field(default=False, exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> ProtocolSpec:
        if self.aggregation == "judge" and self.stopping.kind != "judge":
            raise ValueError("aggregation 'judge' needs stopping kind 'judge' (the judge is called after each round)")
        liang = self.style == "liang"
        if liang and (self.agents != 2 or self.aggregation != "moderator"):
            raise ValueError("style 'liang' needs exactly 2 agents (affirmative, negative) and aggregation 'moderator'")
        if liang and self.stopping.kind not in ("fixed", "moderator", "moderator_confidence"):
            raise ValueError("style 'liang' stops by 'fixed', 'moderator' or 'moderator_confidence'")
        if not liang and (self.aggregation == "moderator" or self.stopping.kind.startswith("moderator")):
            raise ValueError("a moderator exists only in style 'liang'")
        if self.aggregation == "confidence" and not self.confidence:
            raise ValueError("aggregation 'confidence' needs confidence = true (agents must state one)")
        if liang and (self.retention != "all" or self.uncertainty_cue or self.vote_cue):
            raise ValueError("retention and cues apply to style 'peers'")
        if self.initializer == "diverse" and (liang or (self.pool_size is not None and self.pool_size < self.agents)):
            raise ValueError("initializer 'diverse' needs style 'peers' and pool_size >= agents")
        if self.stopping.min_rounds > self.rounds:
            raise ValueError(f"stopping.min_rounds ({self.stopping.min_rounds}) exceeds rounds ({self.rounds})")
        return self

    @property
    def pool(self) -> int:
        """Round-0 candidates sampled by the diverse initializer."""
        return self.pool_size if self.pool_size is not None else 2 * self.agents

    @property
    def needs_judge(self) -> bool:
        """A helper agent is needed: a judge, Liang's moderator and final judge, or a retention filter."""
        return self.stopping.kind == "judge" or self.style == "liang" or self.needs_filter

    @property
    def needs_filter(self) -> bool:
        return self.retention in ("dar", "certain", "similar")

    @property
    def needs_logprobs(self) -> bool:
        return self.uncertainty_cue or self.retention == "perplexity-top"

    def calls_per_round(self) -> str:
        if self.style == "liang":
            return "2 debater calls + 1 moderator call (+1 if its JSON needs repair); 2 final-judge calls at the cap"
        judge = " + 1 judge call" if self.stopping.kind == "judge" else ""
        judge += " + 1 filter call from round 1" if self.needs_filter else ""
        pool = f" ({self.pool} candidate calls in round 0)" if self.initializer == "diverse" else ""
        return f"{self.agents} agent call{'s' if self.agents > 1 else ''}{judge}{pool}"

    def describe(self) -> dict[str, str]:
        """The resolved components, in words, for `moot protocols show`."""
        t = self.topology
        topology = t.kind + {"ring": f" (k={t.k})", "star": f" (hub agent {t.hub})"}.get(t.kind, "")
        if t.kind == "graph":
            topology += f" {t.edges}"
        stop = self.stopping
        stopping = {
            "fixed": f"fixed: all {self.rounds} rounds",
            "consensus": f"consensus of {stop.fraction:.0%} of agents, cap {self.rounds} rounds",
            "stable": f"no answer changed since the previous round, cap {self.rounds} rounds",
            "judge": f"judge confidence >= {stop.threshold:g}/100, cap {self.rounds} rounds",
            "moderator": f"the moderator states a preference and an answer, cap {self.rounds} rounds",
            "moderator_confidence": f"the moderator answers with confidence >= {stop.threshold:g}/100, "
            f"cap {self.rounds} rounds",
        }[stop.kind]
        return {
            "agents": str(self.agents),
            "rounds": f"{self.rounds} (counting round 0)",
            "style": self.style,
            "topology": f"{topology}, density {t.density(self.agents):.2f}" if self.style == "peers" else "roles",
            "history": self.history,
            "peer rendering": self.rendering,
            "initializer": self.initializer
            + (f" (pool of {self.pool}, {self.similarity} similarity)" if self.initializer == "diverse" else ""),
            "confidence": f"stated on 0-{self.confidence_scale}, shown to peers" if self.confidence else "not asked",
            "retention": self.retention + (f" ({self.retain_fraction:.0%})" if self.retention == "perplexity-top" else ""),
            "cues": ", ".join(c for c, on in (("uncertainty (ANLL)", self.uncertainty_cue), ("last vote", self.vote_cue)) if on)
            or "none",
            "stopping": stopping + (f", at least {stop.min_rounds} rounds" if stop.min_rounds > 1 else ""),
            "aggregation": self.aggregation + (f" (ties: {self.tie_rule})" if self.aggregation == "majority" else ""),
            "model calls per round": self.calls_per_round(),
            "reference": self.reference,
        }


def _preset(**fields: Any) -> ProtocolSpec:
    return ProtocolSpec(**fields)


def _dar_presets() -> list[ProtocolSpec]:
    """DAR (Nguyen et al. 2026) and the baselines it compares against: 4 agents, fresh single-turn
    prompts (Choi et al.'s setting), 2 debate rounds after round 0."""
    base: dict[str, Any] = {"agents": 4, "rounds": 3, "history": "fresh"}
    dar = {"retention": "dar", "uncertainty_cue": True, "vote_cue": True}
    paper = "DAR (Nguyen et al. 2026)"
    return [
        _preset(name="dar", **base, **dar,
                reference=f"{paper}: a filter keeps the most disagreeing replies by agent ID; ANLL and last-vote cues"),
        _preset(name="dar-sparse", **base, **dar, topology=Topology(kind="ring"),
                reference=f"{paper} on Li et al.'s sparse ring topology"),
        _preset(name="mad-m2", **base, retention="perplexity-top",
                reference="MAD-M2 (Tian et al. 2026), objective mask: keep the more confident half by perplexity"),
        _preset(name="uncertain-prompt", **base, uncertainty_cue=True,
                reference="Uncertain Prompt (Lin and Hooi 2025): each forwarded reply carries its ANLL"),
        _preset(name="vote-prompt", **base, vote_cue=True,
                reference=f"{paper}'s Vote Prompt baseline: agents are told the last round's majority"),
        _preset(name="dar-no-uncertainty", **base, retention="dar", vote_cue=True,
                reference=f"{paper} ablation without the uncertainty cue"),
        _preset(name="dar-no-vote", **base, retention="dar", uncertainty_cue=True,
                reference=f"{paper} ablation without the last-vote cue"),
        _preset(name="dar-distinct", **base, **{**dar, "retention": "distinct"},
                reference=f"{paper} ablation: a hard filter keeping one reply per distinct answer"),
        _preset(name="dar-certain", **base, **{**dar, "retention": "certain"},
                reference=f"{paper} ablation: the filter keeps the most certain replies"),
        _preset(name="dar-similar", **base, **{**dar, "retention": "similar"},
                reference=f"{paper} ablation: the filter keeps the replies closest to the majority"),
    ]  # fmt: skip


PRESETS: dict[str, ProtocolSpec] = {
    p.name: p
    for p in (
        _preset(
            name="single", agents=1, rounds=1, topology=Topology(kind="none"), fixed_agents=True, fixed_rounds=True,
            reference="one agent, one answer: the single-agent baseline",
        ),
        _preset(
            name="vote", agents=3, rounds=1, topology=Topology(kind="none"), fixed_rounds=True,
            reference="self-consistency (Wang et al. 2023): N independent answers, majority vote",
        ),
        _preset(
            name="society", agents=3, rounds=2,
            reference="Du et al. 2024, Society of Mind: every agent reads all peers' previous replies; majority",
        ),
        _preset(
            name="sparse", agents=4, rounds=3, topology=Topology(kind="ring", k=1),
            reference="Li et al. 2024, sparse communication topology: each agent hears its ring neighbours",
        ),
        _preset(
            name="star", agents=4, rounds=3, topology=Topology(kind="star", hub=0),
            reference="a hub-and-spoke debate: agent 1 hears everyone, the others hear only agent 1",
        ),
        _preset(
            name="self-refine", agents=1, rounds=3, topology=Topology(kind="none"), fixed_agents=True,
            reference="one agent revising its own answer over R rounds (Du et al.'s reflection prompt): "
            "the single-agent baseline of debate",
        ),
        _preset(
            name="liang", agents=2, rounds=3, style="liang", aggregation="moderator", fixed_agents=True,
            stopping=Stopping(kind="moderator"),
            reference="Liang et al. 2024 (MAD): affirmative and negative debaters and a moderator each round; "
            "ends when the moderator prefers an answer, else a final judge decides at the cap",
        ),
        _preset(
            name="liang-fixed", agents=2, rounds=2, style="liang", aggregation="moderator", fixed_agents=True,
            reference="Liang et al.'s debate run for exactly R rounds, then the final judge decides "
            "(the stopping study's fixed schedules)",
        ),
        _preset(
            name="liang-strict", agents=2, rounds=6, style="liang", aggregation="moderator", fixed_agents=True,
            stopping=Stopping(kind="moderator_confidence", threshold=90),
            reference="the stopping study's Liang strict adaptive condition: stop only when the moderator gives "
            "an answer with confidence >= 90/100, cap 6 rounds, else the final judge",
        ),
        _preset(
            name="confidence", agents=3, rounds=2, confidence=True, aggregation="confidence",
            reference="Zhu et al. 2026, confidence-modulated debate: agents state a 0-10 confidence, peers see it, "
            "and the final vote is weighted by it (prompted; the paper also trains calibration)",
        ),
        _preset(
            name="confidence-vote", agents=3, rounds=1, topology=Topology(kind="none"), confidence=True,
            aggregation="confidence", fixed_rounds=True,
            reference="Zhu et al. 2026's confidence-weighted vote over independent answers, no debate",
        ),
        _preset(
            name="diverse", agents=3, rounds=2, initializer="diverse",
            reference="Zhu et al. 2026, diversity-aware initialisation: sample 2N candidates, keep the N that add "
            "most answer diversity, then debate as society",
        ),
        _preset(
            name="diverse-confidence", agents=3, rounds=2, initializer="diverse", confidence=True,
            aggregation="confidence",
            reference="Zhu et al. 2026: diversity-aware initialisation and confidence-modulated debate together",
        ),
        *_dar_presets(),
        _preset(
            name="du-adaptive", agents=3, rounds=6, stopping=Stopping(kind="judge", threshold=90),
            reference="the stopping study's Du adaptive condition: society plus a judge after each round, "
            "stop at confidence >= 90/100, cap 6 rounds; the final answer is still the agents' majority",
        ),
    )
}

COMPONENT_FIELDS = (
    "topology", "history", "rendering", "style", "initializer", "pool_size", "similarity", "confidence",
    "confidence_scale",
    "uncertainty_cue", "vote_cue", "retention", "retain_fraction", "stopping", "aggregation", "tie_rule",
)  # fmt: skip


def resolve_protocol(
    name: str,
    *,
    agents: int | None = None,
    rounds: int | None = None,
    tie_rule: TieRule | None = None,
    components: dict[str, Any] | None = None,
    presets: dict[str, ProtocolSpec] | None = None,
) -> ProtocolSpec:
    """A preset with overrides applied and validated (topology included); errors name the setting."""
    known = {**PRESETS, **(presets or {})}
    if name not in known:
        raise ConfigError(f"unknown protocol {name!r}; known protocols: {', '.join(known)}")
    preset = known[name]
    for value, what, fixed in ((agents, "agents", preset.fixed_agents), (rounds, "rounds", preset.fixed_rounds)):
        if value is not None and value < 1:
            raise ConfigError(f"{what} must be a positive integer, got {value}")
        if value is not None and fixed and value != getattr(preset, what):
            raise ConfigError(f"protocol {name!r} uses exactly {getattr(preset, what)} {what}, got {value}")
    changes: dict[str, Any] = {"agents": agents, "rounds": rounds, "tie_rule": tie_rule, **(components or {})}
    unknown = set(components or {}) - set(COMPONENT_FIELDS)
    if unknown:
        raise ConfigError(f"unknown protocol component {sorted(unknown)[0]!r}; components: {', '.join(COMPONENT_FIELDS)}")
    try:
        spec = ProtocolSpec.model_validate(
            preset.model_dump() | {k: v for k, v in changes.items() if v is not None}
            | {"fixed_agents": preset.fixed_agents, "fixed_rounds": preset.fixed_rounds}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "protocol"
        raise ConfigError(f"protocol setting {where}: {first['msg'].removeprefix('Value error, ')}") from None
    spec.topology.validate_for(spec.agents)
    if spec.similarity == "embedding":
        from moot.debate import embeddings

        if not embeddings.available():
            raise ConfigError("similarity 'embedding' needs the embeddings extra: pip install 'moot[embeddings]'")
    return spec
