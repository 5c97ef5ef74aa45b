"""Protocols as data: a protocol is a set of component choices; presets name the published ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from moot.debate.components.aggregation import Aggregation, TieRule
from moot.debate.components.cues import ConfidenceCue, Cue, UncertaintyCue, VoteCue
from moot.debate.components.history import History
from moot.debate.components.initializers import Initializer
from moot.debate.components.rendering import Rendering
from moot.debate.components.retention import Retention
from moot.debate.components.stopping import Stopping
from moot.debate.components.topology import Topology
from moot.debate.peer_view import CONTENT, FULL, PeerView
from moot.debate.registry import Component, Unregistered, parse, rule
from moot.debate.schedules import SLOTS, Schedule
from moot.errors import ConfigError, unknown_name
from moot.limits import MAX_AGENTS, MAX_POOL, MAX_ROUNDS, check_at_most

if TYPE_CHECKING:
    from moot.debate.agents import AgentSpec
    from moot.tasks.base import Extraction, Question, Task

# What agents are instructed before the question (see ``ProtocolSpec.instruction``).
Instruction = Literal["task", "none"]


def _switch(cls: type[Cue]) -> BeforeValidator:
    """A cue slot: ``true`` means the cue with its defaults, ``false`` or nothing means none."""
    return BeforeValidator(lambda value: cls.model_validate({}) if value is True else None if value is False else value)


# Settings that moot 0.1 kept flat on the protocol, now parameters of a component: (component, parameter,
# the value it had when unused). Experiment files and stored runs that use them keep loading.
_FOLDED = {
    "confidence_scale": ("confidence", "scale", 10),
    "pool_size": ("initializer", "pool_size", None),
    "similarity": ("initializer", "similarity", "jaccard"),
    "retain_fraction": ("retention", "fraction", 0.5),
}


def _as_table(value: Any) -> Any:
    if isinstance(value, str):
        return {"kind": value}
    if isinstance(value, Component):
        return value.model_dump()
    return value


class ProtocolSpec(BaseModel):
    """One protocol, fully resolved: a component of each kind (see moot.debate.registry).

    ``rounds`` counts round 0 (the independent answers), as Du et al.'s code does:
    ``rounds=2`` is round 0 plus one debate round. With an adaptive ``stopping`` rule it is the cap.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str
    agents: int = Field(ge=1)
    rounds: int = Field(ge=1)
    style: Annotated[SerializeAsAny[Schedule], rule("schedule")] = Field(
        default="peers",
        description="peers: agents answer simultaneously and hear their peers; liang: an affirmative and a "
        "negative debater speak in turn and a moderator evaluates each round (Liang et al.)",
        validate_default=True,
    )
    topology: Annotated[SerializeAsAny[Topology], rule("topology")] = Field(default="full", validate_default=True)
    history: Annotated[SerializeAsAny[History], rule("history")] = Field(
        default="chat",
        description="chat: each agent keeps its own chat history (Du); fresh: a new single-turn prompt each "
        "round with the question, the agent's last reply and its peers' replies (Choi / DAR)",
        validate_default=True,
    )
    rendering: Annotated[SerializeAsAny[Rendering], rule("rendering")] = Field(
        default="du",
        description="du: peers' replies one by one; grouped: by answer, with counts",
        validate_default=True,
    )
    initializer: Annotated[SerializeAsAny[Initializer], rule("initializer")] = Field(
        default="independent",
        description="independent: each agent answers once in round 0; diverse: sample pool_size candidates and "
        "greedily keep the agents-many that add most answer diversity (Zhu et al.)",
        validate_default=True,
    )
    confidence: Annotated[ConfidenceCue | None, _switch(ConfidenceCue)] = Field(
        default=None, description="agents state a 0..scale confidence, shown to peers (Zhu et al.)"
    )
    uncertainty_cue: Annotated[UncertaintyCue | None, _switch(UncertaintyCue)] = Field(
        default=None, description="each forwarded reply carries its ANLL (DAR's uncertainty prompt; needs logprobs)"
    )
    vote_cue: Annotated[VoteCue | None, _switch(VoteCue)] = Field(
        default=None, description="agents are told the previous round's majority (the last vote)"
    )
    extra_cues: tuple[Annotated[SerializeAsAny[Cue], rule("cue")], ...] = Field(
        default=(),
        alias="cues",
        description="further cues, in order, after the three above: any registered cue, a plug-in's own "
        'included (cues = [{ kind = "tally" }])',
    )
    retention: Annotated[SerializeAsAny[Retention], rule("retention")] = Field(
        default="all", description="which previous-round replies agents hear", validate_default=True
    )
    stopping: Annotated[SerializeAsAny[Stopping], rule("stopping")] = Field(default="fixed", validate_default=True)
    aggregation: Annotated[SerializeAsAny[Aggregation], rule("aggregation")] = Field(
        default="majority",
        description="majority of the last round; confidence-weighted majority; the last judge's answer; or "
        "(liang) the moderator's answer when it ends the debate, else the final judge's",
        validate_default=True,
    )
    tie_rule: TieRule = "first"
    instruction: Instruction = Field(
        default="task",
        description="task: every agent's system message is the task's instruction (arithmetic's step-by-step "
        "prompt; Liang's debaters get it before their meta prompt), so compared arms are instructed alike; "
        "none: no task instruction (Du et al.'s and Choi et al.'s code send no system message)",
    )
    peer_view: PeerView = Field(
        default="content",
        description="what of a reasoning model's reply is shown again, to peers and in its own next prompt: "
        "content (the answer part), full (reasoning and content), or reasoning:N (the reasoning cut to N tokens)",
    )
    reference: str = ""
    fixed_agents: bool = Field(default=False, exclude=True)
    fixed_rounds: bool = Field(default=False, exclude=True)
    # agents of at least this many distinct models (backends): a heterogeneous protocol (Heter-MAD)
    min_models: int = Field(default=1, ge=1, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _stored_instruction(cls, data: Any, info: ValidationInfo) -> Any:
        """A condition stored before ``instruction`` existed: Liang's debaters had their meta prompt alone
        (none), every other protocol the task's instruction (task)."""
        if isinstance(data, dict) and "instruction" not in data and (info.context or {}).get("stored"):
            style = data.get("style", "peers")
            kind = style.get("kind") if isinstance(style, dict) else getattr(style, "kind", style)
            return {**data, "instruction": "none" if kind == "liang" else "task"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, data: Any) -> Any:
        """Fold moot 0.1's flat settings (confidence_scale, pool_size, similarity, retain_fraction) into
        their components; a setting given for a component that has no such parameter is an error."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key, (slot, parameter, unused) in _FOLDED.items():
            if key not in data:
                continue
            value = data.pop(key)
            target = _as_table(data.get(slot, cls.model_fields[slot].default))
            if slot == "confidence" and target is True:
                target = {"kind": "confidence"}
            if isinstance(target, dict) and parameter in _rule_fields(slot, target):
                data[slot] = target if value is None else {**target, parameter: value}
            elif value != unused:
                kind = target.get("kind") if isinstance(target, dict) else target
                raise ValueError(f"{key} applies to a {slot} rule with a {parameter!r} parameter, not to {kind!r}")
        return data

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> ProtocolSpec:
        stored = bool((info.context or {}).get("stored"))
        if stored and any(isinstance(c, Unregistered) for c in self.components()):
            return self  # a stored rule whose plug-in is not loaded: its capabilities are unknown here
        if not stored:  # a stored run reads as it was run (Liang ignored the slots it does not use)
            self._check_slots()
        for component in self.components():
            component.check(self)
        return self

    def _check_slots(self) -> None:
        """Refuse a slot its schedule does not read (``Schedule.slots``) set to anything but its default:
        it would be silently ignored (Liang's debaters have no topology, rendering or history)."""
        for slot in sorted(SLOTS - self.style.slots):
            field = _FIELDS.get(slot, slot)
            value, default = getattr(self, field), type(self).model_fields[field].default
            if value != (parse(_family(slot), default) if isinstance(default, str) else default):
                raise ValueError(f"style {self.style.kind!r} does not use {slot!r}")

    @field_validator("extra_cues")
    @classmethod
    def _not_slotted(cls, cues: tuple[Cue, ...]) -> tuple[Cue, ...]:
        """A built-in cue goes in its own slot, where the rest of moot reads it (a stated confidence is
        read from each reply by the ``confidence`` slot's cue)."""
        for cue in cues:
            slot = next((s for s, c in _SLOTTED_CUES.items() if isinstance(cue, c)), None)
            if slot is not None:
                raise ValueError(f"cue {cue.kind!r} has its own slot: {slot} = true (or a table)")
        return cues

    @model_serializer(mode="wrap")
    def _cues_when_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``cues`` is dumped under its own name and left out while empty, and ``peer_view`` while it is the
        default, so that every condition stored before they existed keeps its JSON and fingerprint
        (``results_fingerprint``) and resumes."""
        data = handler(self)
        if isinstance(data, dict):
            cues = data.pop("extra_cues", data.pop("cues", ()))
            if cues:
                data["cues"] = cues
            if data.get("peer_view") == CONTENT:
                del data["peer_view"]
        return data

    def components(self) -> list[Component]:
        """Every component, in the order ``moot protocols show`` lists them."""
        slots = (
            self.style,
            self.topology,
            self.history,
            self.rendering,
            self.initializer,
            *self.cues,
            self.retention,
            self.stopping,
            self.aggregation,
        )
        return list(slots)

    def system_prompt(self, task: Task, agent: AgentSpec) -> str | None:
        """An agent's system message: its persona, else the task's instruction (``instruction = "task"``)."""
        if agent.persona is not None:
            return agent.persona
        return task.system_prompt if self.instruction == "task" else None

    @property
    def cues(self) -> list[Cue]:
        """Every cue, in the order they are applied: confidence, uncertainty, vote, then ``cues``."""
        return [*(c for c in (self.confidence, self.uncertainty_cue, self.vote_cue) if c is not None), *self.extra_cues]

    @property
    def needs_judge(self) -> bool:
        """A helper agent is needed: a judge, Liang's moderator and final judge, or a retention filter."""
        return any(c.needs_helper for c in self.components())

    @property
    def needs_logprobs(self) -> bool:
        return any(c.needs_logprobs for c in self.components())

    @property
    def judged(self) -> bool:
        """The final answer is a judge's or moderator's, not the agents' vote."""
        return self.aggregation.judged

    def read_reply(self, task: Task, question: Question, text: str) -> tuple[Extraction, float | None]:
        """An agent's reply read as the debate reads it: its confidence statement read and removed where agents
        state one (``confidence``), then its answer by the history's reader (the task's, or Choi et al.'s)."""
        readable, confidence = self.confidence.read(text) if self.confidence is not None else (text, None)
        return self.history.read(task, question, readable), confidence

    @property
    def stated_confidence_scale(self) -> int | None:
        """The 0..scale range agents state confidence on, or None when they are not asked."""
        return self.confidence.scale if self.confidence is not None else None

    def calls_per_round(self) -> str:
        return self.style.calls_per_round(self)

    def describe(self) -> dict[str, str]:
        """The resolved components, in words, for `moot protocols show`."""
        return {
            "agents": str(self.agents),
            "rounds": f"{self.rounds} (counting round 0)",
            "style": self.style.describe(self),
            "topology": self.style.topology_text(self),
            "history": self.history.describe(self),
            "peer rendering": self.rendering.describe(self),
            "initializer": self.initializer.describe(self),
            "confidence": self.confidence.describe(self) if self.confidence is not None else "not asked",
            "retention": self.retention.describe(self),
            "cues": ", ".join(c.describe(self) for c in self.cues if c is not self.confidence) or "none",
            "stopping": self.stopping.describe(self),
            "aggregation": self.aggregation.describe(self),
            "instruction": "the task's (its system prompt, where it has one)"
            if self.instruction == "task"
            else "none (no task system prompt)",
            "helper sampling": "as the agents (as each paper's code samples every role); a condition's "
            "judge = { sampling = {...} } sets its own"
            if self.needs_judge
            else "no helper",
            "peer view": {
                CONTENT: "a reasoning model's content (its answer part); its reasoning is not shown again",
                FULL: "a reasoning model's reasoning and content",
            }.get(self.peer_view, f"a reasoning model's content, its reasoning cut to {self.peer_view[10:]} tokens"),
            "model calls per round": self.calls_per_round(),
            "reference": self.reference,
        }


def _family(slot: str) -> str:
    """The component family a protocol slot holds."""
    return "cue" if slot in ("confidence", "uncertainty_cue", "vote_cue", "cues") else slot


_FIELDS = {"cues": "extra_cues"}  # a slot whose field has another name (``cues`` is also every cue, a property)
_SLOTTED_CUES = {"confidence": ConfidenceCue, "uncertainty_cue": UncertaintyCue, "vote_cue": VoteCue}


def _rule_fields(family: str, table: dict[str, Any]) -> set[str]:
    from moot.debate.registry import rules

    rule = rules("cue" if family == "confidence" else family).get(table.get("kind", ""))
    return set(rule.model_fields) if rule is not None else set()


def _preset(**fields: Any) -> ProtocolSpec:
    return ProtocolSpec(**fields)


def _dar_presets() -> list[ProtocolSpec]:
    """DAR (Nguyen et al. 2026) and the baselines it compares against, in its code's setting (Choi et
    al.'s framework): 4 agents, 2 debate rounds after round 0, fresh single-turn prompts in DAR's words
    with Choi et al.'s question templates and "{final answer: X}" format request, peers as DAR shows
    them, and ties of the vote (the last-vote cue's and the final answer's) broken at random from a
    seed derived per question and round and recorded in the vote, as Choi et al. break them."""
    base: dict[str, Any] = {
        "agents": 4,
        "rounds": 3,
        "history": {"kind": "fresh", "templates": "choi"},
        "rendering": "dar",
        "tie_rule": "random",
    }
    dar = {"retention": "dar", "uncertainty_cue": True, "vote_cue": True}
    paper = "DAR (Nguyen et al. 2026)"
    return [
        _preset(
            name="dar",
            **base,
            **dar,
            reference=f"{paper}: a filter keeps the most disagreeing replies by agent ID; ANLL and last-vote cues",
        ),
        _preset(
            name="dar-sparse", **base, **dar, topology="ring", reference=f"{paper} on Li et al.'s sparse ring topology"
        ),
        _preset(
            name="society-fresh",
            **base,
            reference=f"{paper}'s Society of Mind baseline: Du et al.'s debate in Choi et al.'s framework (fresh "
            "prompts, Choi's templates, random ties), every reply forwarded, no cue",
        ),
        _preset(
            name="mad-m2",
            **base,
            retention="perplexity-top",
            reference="MAD-M2 (Tian et al. 2026), objective mask: keep the more confident half by perplexity",
        ),
        _preset(
            name="uncertain-prompt",
            **base,
            uncertainty_cue=True,
            reference="Uncertain Prompt (Lin and Hooi 2025): each forwarded reply carries its ANLL",
        ),
        _preset(
            name="vote-prompt",
            **base,
            vote_cue=True,
            reference=f"{paper}'s Vote Prompt baseline: agents are told the last round's majority",
        ),
        _preset(
            name="dar-no-uncertainty",
            **base,
            retention="dar",
            vote_cue=True,
            reference=f"{paper} ablation without the uncertainty cue",
        ),
        _preset(
            name="dar-no-vote",
            **base,
            retention="dar",
            uncertainty_cue=True,
            reference=f"{paper} ablation without the last-vote cue",
        ),
        _preset(
            name="dar-distinct",
            **base,
            **{**dar, "retention": "distinct"},
            reference=f"{paper} ablation: a hard filter keeping one reply per distinct answer",
        ),
        _preset(
            name="dar-text",
            **base,
            **{**dar, "retention": "dar-text"},
            reference=f"{paper} ablation: text-based filtering, the filter asked for the responses to keep "
            "instead of their agent IDs (their filter_nonindex)",
        ),
        _preset(
            name="dar-certain",
            **base,
            **{**dar, "retention": "certain"},
            reference=f"{paper} ablation: the filter keeps the most certain replies",
        ),
        _preset(
            name="dar-similar",
            **base,
            **{**dar, "retention": "similar"},
            reference=f"{paper} ablation: the filter keeps the replies most similar to its own (their filter_support)",
        ),
    ]


def _zhu_presets() -> list[ProtocolSpec]:
    """Zhu et al. 2026's interventions. Their confidence-modulated debate shows each agent's 0-10 confidence
    to its peers and takes the final answer by majority vote over the last round; the ``-weighted``
    variants weight that vote by stated confidence instead (moot's, after the paper's theory)."""
    paper = "Zhu et al. 2026"
    confidence: dict[str, Any] = {"agents": 3, "rounds": 2, "confidence": True}
    diverse: dict[str, Any] = {"agents": 3, "rounds": 2, "initializer": "diverse"}
    shown = "agents state a 0-10 confidence and peers see it"
    weighted = "the final vote is weighted by stated confidence (a missing confidence weighs 0)"
    return [
        _preset(
            name="confidence",
            **confidence,
            reference=f"{paper}, confidence-modulated debate: {shown}; the final answer is the majority of the "
            "last round, as in the paper (prompted; the paper also trains calibration)",
        ),
        _preset(
            name="confidence-weighted",
            **confidence,
            aggregation="confidence",
            reference=f"after {paper}'s confidence-weighted counts: {shown}; {weighted} (not the paper's "
            "aggregation, which is a plain majority)",
        ),
        _preset(
            name="confidence-vote",
            agents=3,
            rounds=1,
            topology="none",
            confidence=True,
            aggregation="confidence",
            fixed_rounds=True,
            reference=f"independent answers with a stated 0-10 confidence, no debate; {weighted} (moot's "
            f"weighted self-consistency, not one of {paper}'s baselines)",
        ),
        _preset(
            name="diverse",
            **diverse,
            reference=f"{paper}, diversity-aware initialisation: sample 2N candidates, keep the N that add "
            "most answer diversity, then debate as society",
        ),
        _preset(
            name="diverse-confidence",
            **diverse,
            confidence=True,
            reference=f"{paper}: diversity-aware initialisation and confidence-modulated debate together; "
            "the final answer is the majority of the last round",
        ),
        _preset(
            name="diverse-confidence-weighted",
            **diverse,
            confidence=True,
            aggregation="confidence",
            reference=f"{paper}'s diversity-aware initialisation with confidence shown to peers; {weighted}",
        ),
    ]


PRESETS: dict[str, ProtocolSpec] = {
    p.name: p
    for p in (
        _preset(
            name="single",
            agents=1,
            rounds=1,
            topology="none",
            fixed_agents=True,
            fixed_rounds=True,
            reference="one agent, one answer: the single-agent baseline",
        ),
        _preset(
            name="vote",
            agents=3,
            rounds=1,
            topology="none",
            fixed_rounds=True,
            reference="self-consistency (Wang et al. 2023): N independent answers, majority vote",
        ),
        _preset(
            name="society",
            agents=3,
            rounds=2,
            reference="Du et al. 2024, Society of Mind: every agent reads all peers' previous replies; majority",
        ),
        _preset(
            name="sparse",
            agents=4,
            rounds=3,
            topology={"kind": "ring", "k": 1},
            reference="Li et al. 2024, sparse communication topology: each agent hears its ring neighbours",
        ),
        _preset(
            name="star",
            agents=4,
            rounds=3,
            topology={"kind": "star", "hub": 0},
            reference="a hub-and-spoke debate: agent 1 hears everyone, the others hear only agent 1",
        ),
        _preset(
            name="self-refine",
            agents=1,
            rounds=3,
            topology="none",
            fixed_agents=True,
            reference="one agent revising its own answer over R rounds (Du et al.'s reflection prompt): "
            "the single-agent baseline of debate",
        ),
        _preset(
            name="liang",
            agents=2,
            rounds=3,
            style="liang",
            aggregation="moderator",
            fixed_agents=True,
            stopping="moderator_answer",
            reference="Liang et al. 2024 (MAD), as released: affirmative and negative debaters and a moderator "
            "each round; ends when the moderator's debate_answer is non-empty, else a final judge decides at the "
            "cap from the first-round answers",
        ),
        _preset(
            name="liang-preference",
            agents=2,
            rounds=3,
            style="liang",
            aggregation="moderator",
            fixed_agents=True,
            stopping="moderator",
            reference="moot 0.1's reading of Liang et al.: ends only when the moderator states a preference and "
            "an answer that parses, else the final judge at the cap",
        ),
        _preset(
            name="liang-fixed",
            agents=2,
            rounds=2,
            style="liang",
            aggregation="moderator",
            fixed_agents=True,
            reference="Liang et al.'s debate run for exactly R rounds, then the final judge decides "
            "(the stopping study's original-prompt fixed schedules)",
        ),
        _preset(
            name="liang-strict",
            agents=2,
            rounds=6,
            style={"kind": "liang", "moderator_prompt": "strict"},
            aggregation="moderator",
            fixed_agents=True,
            stopping={"kind": "moderator_confidence", "threshold": 90, "require_preference": True},
            reference="the stopping study's Liang strict adaptive condition: a moderator prompt that asks a 0-100 "
            "confidence and an empty debate_answer while more rounds may help; stop on a preference, a non-empty "
            "answer and confidence >= 90, cap 6 rounds, else the final judge",
        ),
        _preset(
            name="liang-prompt-matched",
            agents=2,
            rounds=2,
            style={"kind": "liang", "moderator_prompt": "strict", "final_judge": False},
            aggregation="moderator",
            fixed_agents=True,
            fixed_rounds=True,
            reference="the stopping study's prompt-matched fixed-two control: liang-strict's moderator prompt, "
            "exactly 2 rounds, the round-2 debate_answer scored directly (a blank one is wrong), no final judge",
        ),
        _preset(
            name="liang-confident",
            agents=2,
            rounds=6,
            style="liang",
            aggregation="moderator",
            fixed_agents=True,
            stopping={"kind": "moderator_confidence", "threshold": 90},
            reference="moot 0.1's liang-strict: the moderator adds a 0-100 confidence; stop on an answer with "
            "confidence >= 90, cap 6 rounds, else the final judge",
        ),
        *_zhu_presets(),
        *_dar_presets(),
        _preset(
            name="du-adaptive",
            agents=3,
            rounds=6,
            stopping={"kind": "judge", "threshold": 90},
            reference="the stopping study's Du adaptive condition: society plus a judge after each round, "
            "stop at confidence >= 90/100, cap 6 rounds; the final answer is still the agents' majority",
        ),
        _preset(
            name="gated",
            agents=3,
            rounds=2,
            stopping="consensus",
            reference="debate only where round 0 disagrees (iMAD's question, Fan et al. 2026, in its simplest "
            "form: agreement, not their trained classifier, decides): society's round 0; a unanimous round 0 "
            "keeps its answer, any disagreement or unread answer gets society's debate round",
        ),
        _preset(
            name="stable",
            agents=3,
            rounds=6,
            stopping="stability",
            reference="adaptive stability detection (Hu et al. 2025) on society: after each round the count of agents "
            "holding each question's plurality answer is fitted, over all questions, by a two-component Beta-Binomial "
            "mixture; every debate stops once consecutive rounds' fits differ by KS < 0.05 twice running, cap 6",
        ),
        _preset(
            name="free-mad",
            agents=3,
            rounds=2,
            cues=[{"kind": "anti-conformity"}],
            aggregation="trajectory",
            reference="Free-MAD (Cui et al. 2026): society's round 0, one debate round with an anti-conformity "
            "instruction (moot's wording), and the answer with the best score over the whole trajectory, not the "
            "last round's majority",
        ),
        _preset(
            name="heter-mad",
            agents=3,
            rounds=2,
            min_models=2,
            reference="Heter-MAD (Zhang et al. 2025): society whose agents run on different foundation models, so each "
            "agent reads other models' replies; the condition gives each agent its backend ([[conditions.agents]]), "
            "at least two models",
        ),
        _preset(
            name="moa",
            agents=3,
            rounds=2,
            history="synthesize",
            aggregation="synthesis",
            reference="Mixture-of-Agents (Wang et al. 2024): proposers answer, each later layer's proposers read the "
            "previous layer's replies under the Aggregate-and-Synthesize prompt (rounds = layers), and an aggregator "
            "synthesises the last layer's replies into the final answer; proposers of different models are set per "
            "agent",
        ),
        _preset(
            name="self-moa",
            agents=6,
            rounds=1,
            history="synthesize",
            aggregation="synthesis",
            reference="Self-MoA (Li et al. 2025): one model sampled six times, and an aggregator (the same model) "
            "synthesises the six replies into the final answer under Mixture-of-Agents' prompt",
        ),
    )
}

NOT_COMPONENTS = ("name", "agents", "rounds", "reference", "fixed_agents", "fixed_rounds", "min_models")
# What a condition or user preset may set: every component slot, the tie rule, and the flat settings of moot 0.1.
COMPONENT_FIELDS = (
    *(field.alias or name for name, field in ProtocolSpec.model_fields.items() if name not in NOT_COMPONENTS),
    *_FOLDED,
)


def resolve_protocol(
    name: str,
    *,
    agents: int | None = None,
    rounds: int | None = None,
    tie_rule: TieRule | None = None,
    components: dict[str, Any] | None = None,
    presets: dict[str, ProtocolSpec] | None = None,
) -> ProtocolSpec:
    """A preset with overrides applied and validated (topology included); errors name the setting.

    A component given as a table without ``kind`` changes parameters of the preset's rule
    (``stopping = {threshold = 80}`` on du-adaptive keeps its judge); with ``kind`` or as a name it
    replaces the rule."""
    known = {**PRESETS, **(presets or {})}
    if name not in known:
        raise ConfigError(unknown_name("protocol", name, known))
    preset = known[name]
    for value, what, fixed, limit in (
        (agents, "agents", preset.fixed_agents, MAX_AGENTS),
        (rounds, "rounds", preset.fixed_rounds, MAX_ROUNDS),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{what} must be a positive integer, got {value}")
        if value is not None:
            check_at_most(value, limit, what)
        if value is not None and fixed and value != getattr(preset, what):
            raise ConfigError(f"protocol {name!r} uses exactly {getattr(preset, what)} {what}, got {value}")
    unknown = set(components or {}) - set(COMPONENT_FIELDS)
    if unknown:
        raise ConfigError(
            f"unknown protocol component {sorted(unknown)[0]!r}; components: {', '.join(COMPONENT_FIELDS)}"
        )
    base = preset.model_dump()
    changes: dict[str, Any] = {"agents": agents, "rounds": rounds, "tie_rule": tie_rule}
    for key, given in (components or {}).items():
        if isinstance(given, dict) and "kind" not in given and isinstance(base.get(key), dict):
            given = {**base[key], **given}
        changes[key] = given
    try:
        spec = ProtocolSpec.model_validate(
            base
            | {k: v for k, v in changes.items() if v is not None}
            | {
                "fixed_agents": preset.fixed_agents,
                "fixed_rounds": preset.fixed_rounds,
                "min_models": preset.min_models,
            }
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-")) or "protocol"
        raise ConfigError(f"protocol setting {where}: {first['msg'].removeprefix('Value error, ')}") from None
    pool = getattr(spec.initializer, "pool", None)
    if callable(pool):
        check_at_most(pool(spec.agents), MAX_POOL, "protocol setting initializer.pool_size (the candidate pool)")
    spec.topology.validate_for(spec.agents)
    return spec
