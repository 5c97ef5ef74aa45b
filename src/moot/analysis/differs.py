"""What two arms of an experiment differ in besides the mechanism under test (issue 55).

A comparison of two conditions measures everything that differs between them. ``arm_profiles`` reads, per
condition and task, what its agents were first asked (the STORED round-0 requests: table ``calls`` joined from
the round-0 ``turns``) and its resolved condition (``RunStore.conditions``), never its name; ``differences``
lists each aspect in which two profiles differ, with both values, split in two:

- ``protocol``: the debate mechanism under comparison: rounds, schedule style, topology, history, peer
  rendering, peer view, initializer, cues (confidence, uncertainty, last vote, others, agreement), retention,
  stopping, aggregation, and whether a helper (judge, moderator, filter) takes part.
- ``also``: what else differs ("also differs"), which the difference may measure too: model, sampling
  (temperature, top_p, max_tokens, stop, reasoning settings), seeds, system message, template, agents, tie
  rule, and the helper's model and sampling where both arms have a helper.

Rules, for the edge cases:

- Values come from every agent's round-0 requests, each agent's most common value over the questions; agents
  that differ are shown in agent order ("0.7/1.0/1.0"), agents that agree as one value, so 3 agents at 1.0 and
  4 at 1.0 agree. Log-probabilities and the sample count are not compared: they do not change what is sampled.
- The system message is each agent's up to the paragraph that holds the question (its instruction: the task's,
  a persona, or none). The template is agent 1's round-0 prompt with the question's own text taken out (the
  stored question, else its lines and choices): from that paragraph of the system message on (Liang's debater
  meta prompt states the question there), then the user message. Each is compared by a hash of its text, the
  most common over the questions (a question whose text could not be taken out whole does not decide it), and
  named from the resolved condition: "Liang" (the liang style), "Choi" (fresh history with Choi et al.'s
  templates), "Du" (the task's own question prompt, Du et al.'s wording where the task has theirs), with
  "confidence form" for Zhu et al.'s "Confidence: N" request (alone on Du's wording) and "<kind> cue" for another
  cue that adds an instruction. Two templates of one name but different text are shown by hash.
- A cue that changes the round-0 prompt is protocol, and the template it makes still differs: a confidence arm
  against a vote starts from another prompt ("template (confidence form vs Du)"). Likewise a fresh history's
  ``templates`` (Choi et al.'s or the task's) is the template, not the history: history compares chat and fresh.
- Seeds: "derived" when every round-0 seed is moot's derivation from the run seed, question, agent and round;
  "fixed N", "none", else a hash of every seed. Not compared when both arms sample greedily (temperature 0:
  seeds change nothing) or their initializers differ (a diversity-aware round 0 draws its own candidates:
  that is the initializer).
- Agents: also differs when both arms have several agents; a single agent against several is the comparison
  itself (protocol). The tie rule is compared only where both arms have several agents (one cannot tie).
- Against a vote pool (``moot compare --budget``: vote@k of k answers matched by cost) the pool's size is not a
  difference: ``ignore=("agents",)``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from moot.analysis.formatting import DASH
from moot.debate.components.cues import ConfidenceCue
from moot.debate.protocols import ProtocolSpec
from moot.debate.registry import Component
from moot.runner.config import ResolvedCondition
from moot.runner.store import RunStore
from moot.seeds import derive_seed
from moot.tasks.base import Question

PLACEHOLDER = "{question}"
HELPER_ROLES = {"retention": "filter", "stopping": "judge", "schedule": "moderator"}
ALSO_DIFFERS_NOTE = (
    "Also differs: what the two arms differ in besides the protocol under comparison (model, sampling, seeds, "
    "system message, template, agents, tie rule, helper model), read from their stored round-0 requests and "
    "resolved conditions; arms that differ in more than the protocol: the difference may measure that too."
)
POOL_DIFFERS_NOTE = (
    "Also differs: what the debate and its pool differ in besides the protocol (model, sampling, seeds, system "
    "message, template, tie rule; the pool's size is not, k is matched by cost), read from their stored round-0 "
    "requests and resolved conditions; a row whose arms differ in more than the protocol may measure that too."
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Prompt(_Frozen):
    """A system message or template: its name (from the resolved condition) and the hash of its text ("" for none)."""

    name: str
    digest: str


class ArmProfile(_Frozen):
    """One arm (condition) on one task: what its round-0 requests asked and the protocol it ran, in words."""

    condition: str
    task: str
    questions: int  # questions with a stored round-0 request
    model: str  # configured model names, per agent where they differ
    temperature: str
    top_p: str
    max_tokens: str
    stop: str
    reasoning: str  # reasoning_effort / thinking where set, else "none"
    seeds: str  # "derived", "fixed N", "none" or "other <hash>"
    system: Prompt
    template: Prompt
    agents: int
    tie_rule: str
    helper_model: str  # "" without a helper
    helper_sampling: str
    protocol: dict[str, str]  # the mechanism's aspects (rounds, topology, ...) in words


class Difference(_Frozen):
    """One aspect in which arms A and B differ, with both values."""

    aspect: str
    a: str
    b: str

    @property
    def text(self) -> str:
        return f"{self.aspect} ({self.a} vs {self.b})"


class Differences(_Frozen):
    """What arms A and B differ in on one task: the protocol under comparison, and what else differs."""

    a: str
    b: str
    task: str
    protocol: tuple[Difference, ...]
    also: tuple[Difference, ...]

    @property
    def text(self) -> str:
        """E.g. "template (Choi vs Du); agents (4 vs 3)"; "—" when nothing but the protocol differs."""
        return "; ".join(d.text for d in self.also) or DASH

    @property
    def aspects(self) -> tuple[str, ...]:
        """Every aspect that differs, protocol first."""
        return tuple(d.aspect for d in (*self.protocol, *self.also))


# -- reading a store --------------------------------------------------------------------------------------
@dataclass
class _Agent:
    """One agent's round-0 requests over the questions: each setting's values, counted."""

    values: dict[str, Counter[str]] = field(default_factory=dict)
    system: Counter[str] = field(default_factory=Counter)
    template: Counter[str] = field(default_factory=Counter)
    seeds: list[tuple[str, int, int | None]] = field(default_factory=list)  # (question, run seed, call seed)

    def count(self, name: str, value: str) -> None:
        self.values.setdefault(name, Counter())[value] += 1

    def most(self, name: str) -> str:
        counter = self.values.get(name)
        return counter.most_common(1)[0][0] if counter else "none"


SETTINGS = ("model", "temperature", "top_p", "max_tokens", "stop", "reasoning")


def arm_profiles(run: RunStore | Path | str) -> dict[tuple[str, str], ArmProfile]:
    """(condition, task) -> its profile, for every arm with a stored round-0 request. One read of the store's
    round-0 turns and their calls (``RunStore.round0_requests``); read-only."""
    from moot.analysis.transcripts import open_run

    store, owned = open_run(run)
    try:
        conditions = store.conditions()
        questions = store.questions()
        arms: dict[tuple[str, str], dict[str, _Agent]] = {}
        factored: dict[tuple[str, str], _Factor] = {}
        for condition, task, qid, seed, agent, model, request in store.round0_requests():
            if condition not in conditions:
                continue
            factor = factored.get((task, qid))
            if factor is None:
                factor = factored[(task, qid)] = _Factor(questions.get((task, qid)))
            record = arms.setdefault((condition, task), {}).setdefault(agent, _Agent())
            _add(record, qid, seed, model, request, factor)
        return {
            (condition, task): _profile(conditions[condition], task, agents)
            for (condition, task), agents in arms.items()
        }
    finally:
        if owned:
            store.close()


def _add(record: _Agent, qid: str, seed: int, model: str, request: Mapping[str, Any], factor: _Factor) -> None:
    """One round-0 request of an agent: its settings, seed, system message and template."""
    record.count("model", model)
    for name in ("temperature", "top_p", "max_tokens", "stop"):
        record.count(name, _shown(request.get(name)))
    reasoning = [f"{k}={_shown(request[k])}" for k in ("reasoning_effort", "thinking") if request.get(k) is not None]
    record.count("reasoning", " ".join(reasoning) or "none")
    call_seed = request.get("seed")
    record.seeds.append((qid, seed, call_seed if isinstance(call_seed, int) else None))
    messages = [m for m in request.get("messages") or () if isinstance(m, Mapping)]
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    instruction, framing = _split_system(factor(system))
    record.system[_digest(instruction)] += 1
    record.template[_digest(f"{framing}\n\n{factor(user)}")] += 1


class _Factor:
    """Takes one question's own text out of a message: the stored question whole where the message holds it,
    else its lines (less a choice label such as "(A) ") and its choices, each as a whole word."""

    def __init__(self, question: Question | None):
        self.whole = question.prompt if question is not None else ""
        pieces: set[str] = set()
        if question is not None:
            pieces.update(_LABEL.sub("", line).strip() for line in question.prompt.splitlines())
            choices = question.metadata.get("choices")
            if isinstance(choices, list):
                pieces.update(str(c).strip() for c in choices)
        ordered = sorted((p for p in pieces if p), key=len, reverse=True)
        self.pattern = re.compile("|".join(rf"(?<!\w){re.escape(p)}(?!\w)" for p in ordered)) if ordered else None

    def __call__(self, text: str) -> str:
        if self.whole and self.whole in text:
            return text.replace(self.whole, PLACEHOLDER)
        if self.pattern is None:
            return text
        return _RUNS.sub(PLACEHOLDER, self.pattern.sub(PLACEHOLDER, text))  # a passage's lines: one placeholder


_LABEL = re.compile(r"^\(?[A-Z][).:]\s*")
_RUNS = re.compile(re.escape(PLACEHOLDER) + r"(?:\s+" + re.escape(PLACEHOLDER) + ")+")


def _split_system(system: str) -> tuple[str, str]:
    """A system message's instruction (its paragraphs before the one that holds the question) and the rest,
    which frames the question (Liang's debater meta prompt) and so belongs to the template."""
    paragraphs = system.split("\n\n")
    at = next((i for i, p in enumerate(paragraphs) if PLACEHOLDER in p), len(paragraphs))
    return "\n\n".join(paragraphs[:at]), "\n\n".join(paragraphs[at:])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else ""


def _shown(value: Any) -> str:
    """A request's or component's setting in words: none for null or empty, lists comma-separated."""
    if value is None or value == [] or value == ():
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(json.dumps(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _joined(values: Iterable[str]) -> str:
    """Per-agent values: one value where every agent agrees, else each agent's in order ("0.7/1.0")."""
    values = list(values)
    return values[0] if len(set(values)) == 1 else "/".join(values)


def _profile(condition: ResolvedCondition, task: str, agents: Mapping[str, _Agent]) -> ArmProfile:
    """The profile of one arm from its agents' round-0 requests and its resolved condition."""
    names = [a.name for a in condition.agents]
    order = [name for name in names if name in agents] + [name for name in agents if name not in names]
    recorded = [agents[name] for name in order]
    system = _joined(a.system.most_common(1)[0][0] for a in recorded)
    protocol = condition.protocol
    judge = condition.judge
    return ArmProfile(
        condition=condition.name,
        task=task,
        questions=len({qid for a in recorded for qid, _, _ in a.seeds}),
        **{name: _joined(a.most(name) for a in recorded) for name in SETTINGS},
        seeds=_seeds([(qid, seed, name, call) for name in order for qid, seed, call in agents[name].seeds]),
        system=Prompt(name=_system_name(condition, system), digest=system),
        template=Prompt(name=template_name(protocol), digest=recorded[0].template.most_common(1)[0][0]),
        agents=protocol.agents,
        tie_rule=protocol.tie_rule,
        helper_model=judge.backend.model_name() if judge is not None else "",
        helper_sampling=_sampling(judge.sampling.model_dump(mode="json")) if judge is not None else "",
        protocol=mechanism(condition),
    )


def _seeds(entries: list[tuple[str, int, str, int | None]]) -> str:
    """How the round-0 seeds were set (see the module's rules)."""
    seeds = [call for *_, call in entries]
    if all(s is None for s in seeds):
        return "none"
    if all(call == derive_seed(seed, qid, agent, 0) for qid, seed, agent, call in entries):
        return "derived"
    if len(set(seeds)) == 1:
        return f"fixed {seeds[0]}"
    return "other " + _digest(json.dumps(sorted(entries, key=repr)))


def _system_name(condition: ResolvedCondition, digest: str) -> str:
    """The system message's name: none, persona (an agent has one), the task's instruction, or other."""
    if not digest:
        return "none"
    if any(a.persona is not None for a in condition.agents):
        return "persona"
    return "task's" if condition.protocol.instruction == "task" else "other"


def template_name(protocol: ProtocolSpec) -> str:
    """The round-0 template's name, from the resolved protocol (see the module's rules)."""
    if protocol.style.kind == "liang":
        base = "Liang"
    elif getattr(protocol.history, "templates", "task") == "choi":
        base = "Choi"
    else:
        base = "Du"
    forms = [
        "confidence form" if isinstance(cue, ConfidenceCue) else f"{cue.kind} cue"
        for cue in protocol.cues
        if cue.instruction()
    ]
    return " + ".join(forms if base == "Du" and forms else [base, *forms])


def _rule(component: Component | None, *leave_out: str) -> str:
    """A component in words: its kind and the parameters it sets away from their defaults (but ``leave_out``)."""
    if component is None:
        return "none"
    data = component.model_dump(mode="json", exclude_defaults=True)
    for name in ("kind", *leave_out):
        data.pop(name, None)
    params = " ".join(f"{k}={_shown(v)}" for k, v in sorted(data.items()))
    return f"{getattr(component, 'kind', type(component).__name__)} {params}".strip()


def _sampling(data: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={_shown(v)}" for k, v in data.items() if v is not None)


def mechanism(condition: ResolvedCondition) -> dict[str, str]:
    """The protocol's aspects in words, as ``differences`` compares them."""
    p = condition.protocol
    helpers = [HELPER_ROLES.get(c.family, c.family) for c in p.components() if c.needs_helper]
    return {
        "rounds": str(p.rounds),
        "style": _rule(p.style),
        "topology": _rule(p.topology),
        "history": _rule(p.history, "templates"),  # its templates are the template, compared from the requests
        "peer rendering": _rule(p.rendering),
        "peer view": p.peer_view,
        "initializer": _rule(p.initializer),
        "confidence cue": _rule(p.confidence),
        "uncertainty cue": _rule(p.uncertainty_cue),
        "vote cue": _rule(p.vote_cue),
        "cues": ", ".join(_rule(c) for c in p.extra_cues) or "none",
        "agreement": _joined(_shown(a.agreement) for a in condition.agents) if condition.agents else "none",
        "retention": _rule(p.retention),
        "stopping": _rule(p.stopping),
        "aggregation": _rule(p.aggregation),
        "helper": ", ".join(dict.fromkeys(helpers)) or "none",
    }


# -- comparing two arms -----------------------------------------------------------------------------------
SAMPLED = ("temperature", "top_p", "max_tokens", "stop", "reasoning")


def differences(a: ArmProfile, b: ArmProfile, ignore: Collection[str] = ()) -> Differences:
    """What arms A and B differ in on their task (the module's rules), leaving out the aspects in ``ignore``.
    Arms of different tasks are refused (ValueError)."""
    if a.task != b.task:
        raise ValueError(f"arms {a.condition!r} ({a.task}) and {b.condition!r} ({b.task}) are on different tasks")
    protocol = [Difference(aspect=k, a=v, b=b.protocol.get(k, "none")) for k, v in a.protocol.items()]
    several = a.agents > 1 and b.agents > 1
    also = [Difference(aspect=name, a=getattr(a, name), b=getattr(b, name)) for name in ("model", *SAMPLED)]
    greedy = a.temperature in ("0", "0.0") and b.temperature in ("0", "0.0")
    if not greedy and a.protocol.get("initializer") == b.protocol.get("initializer"):
        also.append(Difference(aspect="seeds", a=a.seeds, b=b.seeds))
    also += [_prompts("system message", a.system, b.system), _prompts("template", a.template, b.template)]
    agents = Difference(aspect="agents", a=str(a.agents), b=str(b.agents))
    if several:
        also += [agents, Difference(aspect="tie rule", a=a.tie_rule, b=b.tie_rule)]
    else:
        protocol.insert(0, agents)
    if a.helper_model and b.helper_model:
        also += [
            Difference(aspect="helper model", a=a.helper_model, b=b.helper_model),
            Difference(aspect="helper sampling", a=a.helper_sampling, b=b.helper_sampling),
        ]
    return Differences(
        a=a.condition,
        b=b.condition,
        task=a.task,
        protocol=tuple(d for d in protocol if d.a != d.b and d.aspect not in ignore),
        also=tuple(d for d in also if d.a != d.b and d.aspect not in ignore),
    )


def _prompts(aspect: str, a: Prompt, b: Prompt) -> Difference:
    """Two prompts by name, or by name and hash where one name covers different texts; equal when their texts are."""
    if a.digest == b.digest:
        return Difference(aspect=aspect, a=a.name, b=a.name)
    if a.name != b.name:
        return Difference(aspect=aspect, a=a.name, b=b.name)
    return Difference(aspect=aspect, a=f"{a.name} {a.digest[:6]}", b=f"{b.name} {b.digest[:6]}")


def pair_differences(
    profiles: Mapping[tuple[str, str], ArmProfile], a: str, b: str, task: str, ignore: Collection[str] = ()
) -> Differences | None:
    """``differences`` of conditions ``a`` and ``b`` on ``task``; None where either has no stored round-0 request."""
    first, second = profiles.get((a, task)), profiles.get((b, task))
    if first is None or second is None:
        return None
    return differences(first, second, ignore)


def also_differs(d: Differences | None) -> str:
    """A table's "also differs" cell: the differences' text, "unknown" where a profile is missing."""
    return "unknown" if d is None else d.text
