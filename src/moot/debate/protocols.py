"""Protocols as data: a protocol is a set of component choices (``ProtocolSpec``); the presets that name the
published ones, and ``resolve_protocol``, are in moot.debate.protocol_presets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
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
