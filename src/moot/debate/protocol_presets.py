"""The protocol presets (``PRESETS``: the published protocols, and moot's baselines, by name), what a condition
may set over one (``COMPONENT_FIELDS``), and ``resolve_protocol``, which turns a preset and a condition's
overrides into a validated ``ProtocolSpec`` (moot.debate.protocols defines what a protocol is). Importing it
builds the presets, which loads every component rule (moot.debate.registry)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from moot.debate.components.aggregation import TieRule
from moot.debate.protocols import _FOLDED, ProtocolSpec
from moot.errors import ConfigError, unknown_name
from moot.limits import MAX_AGENTS, MAX_POOL, MAX_ROUNDS, check_at_most


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
