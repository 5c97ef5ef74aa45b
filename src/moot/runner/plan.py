"""``moot run --dry-run``: the calls, tokens and cost a run may spend, bounded before it starts.

No model is loaded and no call is made. Each question of each condition is played through the real schedules
(moot.debate.schedules) with a planning caller in place of the models: every call is recorded and answered by a
placeholder reply, a marker that names the reply's ``max_tokens``. So the planned prompts are the ones the run
renders (templates, questions, cues, histories), and the calls are the run's:

- every round is played: adaptive stopping (a judge's confidence, consensus, a moderator's answer) is bounded
  by its cap, and Liang's final judge is called as at the cap;
- a placeholder reads as no answer and as no valid ruling, so each moderator and final-judge ruling counts its
  repair call, and a retention filter falls back to forwarding every reply (the most a filter forwards);
- a call is keyed as the run keys it (backend, model, request, agent; the condition when round-0 sharing is
  off): a request two conditions both make (shared round 0, ``round0_sharing``) is counted once, under the first
  condition that makes it, as the run makes it once;
- a task's own judged metric (biographies' fact checks) is called on the placeholder replies.

The bound of one call (``PlannedCall``), and its assumptions:

- completion tokens <= the request's ``max_tokens`` (x its samples): servers stop there;
- prompt tokens <= ``REQUEST_ALLOWANCE`` + for each message ``MESSAGE_ALLOWANCE`` + the UTF-8 bytes of its
  text outside replies + for each earlier reply it shows, that reply's ``max_tokens`` + ``REPLY_ALLOWANCE``.
  A byte-level BPE token (Qwen, Llama 3, GPT) covers at least one byte, so text is at most its byte count in
  tokens. A reply shown again is assumed to tokenise again into at most the tokens it was generated as, plus
  ``REPLY_ALLOWANCE`` for its edges and for what cues derive from it (its answer in a last-vote line or a
  group's heading, its confidence, its uncertainty): this holds for short answers (numbers, letters, words);
  a free-text answer quoted whole in a cue is counted as its reply's marker again. The two allowances cover a
  chat template's role markers and a default system prompt (Qwen2.5 adds one of about 20 tokens).

The cost bound prices each call at the experiment's ``[prices]`` (full price: no cached-prompt or batch
discount); a model without a price leaves the cost unbounded, and is named.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from moot.backends.base import Backend, GenerationRequest, Message, Reply, Sample, TokenLogprob
from moot.backends.config import BackendConfig
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec
from moot.debate.context import JUDGE_NAME, Debate
from moot.debate.engine import debate_result
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import StopReason
from moot.runner.config import Price
from moot.runner.spend import Spent, stored_spend
from moot.tasks import MetricContext

if TYPE_CHECKING:
    from moot.runner.experiment import Experiment
    from moot.runner.units import Unit

REQUEST_ALLOWANCE = 48  # a chat template's tokens per request: its generation prompt, a default system prompt
MESSAGE_ALLOWANCE = 8  # a chat template's tokens around one message (role markers, separators)
REPLY_ALLOWANCE = 16  # per reply shown again: its edges re-tokenised, its answer, confidence, uncertainty in cues

# A placeholder reply: its max_tokens and its call's key; padded so that no rule reads it as too short to judge
_MARK = re.compile("\ue000(\\d+):[0-9a-f]{12}\\.*\ue001")


def _placeholder(max_tokens: int, key: str) -> str:
    return f"\ue000{max_tokens}:{key[:12]}{'.' * 240}\ue001"


def prompt_bound(messages: Sequence[Message], n: int = 1) -> int:
    """The prompt tokens a request of ``messages`` may count (see the module's docstring), x ``n`` samples."""
    total = REQUEST_ALLOWANCE
    for message in messages:
        shown = _MARK.findall(message.content)
        rest = _MARK.sub("", message.content)
        total += MESSAGE_ALLOWANCE + len(rest.encode("utf-8")) + sum(int(t) + REPLY_ALLOWANCE for t in shown)
    return total * n


@dataclass(frozen=True)
class PlannedCall:
    """One call's bound: its model (what prices are keyed by), prompt and completion tokens at most."""

    model: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Bound:
    """Calls, prompt and completion tokens and US dollars at most (cost None: some model has no price)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _bound(calls: Sequence[PlannedCall], prices: Mapping[str, Price]) -> Bound:
    cost: float | None = 0.0
    for call in calls:
        price = prices.get(call.model)
        if price is None:
            cost = None
        elif cost is not None:
            cost += price.dollars(call.prompt_tokens, call.completion_tokens)
    return Bound(len(calls), sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls), cost)


@dataclass(frozen=True)
class ConditionPlan:
    """One condition's planned questions (x seeds) and the bound of its calls; ``shared``: calls it makes that
    an earlier condition made first (round 0), counted there."""

    name: str
    questions: int
    calls_per_question: int
    shared: int
    bound: Bound


@dataclass(frozen=True)
class Plan:
    """A run's bound: per condition, in all, what the store holds already and what is left to spend."""

    conditions: tuple[ConditionPlan, ...]
    total: Bound
    stored_results: int
    stored: Spent
    remaining_questions: int
    remaining: Bound
    unpriced: tuple[str, ...]  # models of the plan with no price


class _PlanBackend:
    """A backend that is never asked: it names the model the way the run's backend is keyed and priced."""

    def __init__(self, config: BackendConfig):
        self.name = config.kind
        self.model_id = config.model_name()

    @property
    def supports_logprobs(self) -> bool:
        return True

    @property
    def parallel(self) -> int:
        return 1

    async def check(self) -> None:
        return None

    async def generate(self, request: GenerationRequest) -> Reply:
        raise RuntimeError("a dry run makes no call")

    async def aclose(self) -> None:
        return None


class _PlanCaller(Caller):
    """Records every call of one question and answers it with a placeholder reply."""

    def __init__(self, scope: str | None):
        super().__init__()
        self._scope = scope
        self.calls: list[tuple[str, PlannedCall]] = []

    async def call(self, backend: Backend, request: GenerationRequest, *, agent: str, round: int) -> Reply:
        payload: dict[str, Any] = {"backend": backend.name, "model": backend.model_id, "request": request.payload()}
        payload |= {"agent": agent, "scope": self._scope}
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        planned = PlannedCall(
            backend.model_id, prompt_bound(request.messages, request.n), request.max_tokens * request.n
        )
        self.calls.append((key, planned))
        logprobs = (TokenLogprob(".", -1.0),) if request.logprobs else None
        sample = Sample(_placeholder(request.max_tokens, key), "stop", 0, 0, 0.0, logprobs)
        return Reply((sample,) * request.n, backend.model_id)


def _plannable(protocol: ProtocolSpec) -> ProtocolSpec:
    """The protocol as planned: a diverse initialiser compares texts by Jaccard, never by an embedding model
    (which placeholder is kept does not change any prompt's bound: every placeholder of a round is alike)."""
    if getattr(protocol.initializer, "similarity", None) == "embedding":
        initializer = protocol.initializer.model_copy(update={"similarity": "jaccard"})
        return protocol.model_copy(update={"initializer": initializer})
    return protocol


def _agent(spec: AgentSpec, backends: dict[str, _PlanBackend]) -> Agent:
    key = spec.backend.model_dump_json()
    backend = backends.setdefault(key, _PlanBackend(spec.backend))
    return Agent(spec, cast(Backend, backend))


async def _play(unit: Unit, backends: dict[str, _PlanBackend], caller: _PlanCaller) -> None:
    """Play ``unit`` through every round with placeholder replies, then its task's metric, as the run does."""
    condition = unit.condition
    protocol = _plannable(condition.protocol)
    agents = [_agent(spec, backends) for spec in condition.agents]
    judge = _agent(condition.judge, backends) if condition.judge is not None else None
    helper = judge if protocol.needs_judge else None
    debate = Debate(unit.question, unit.task, protocol, agents, caller, unit.seed, helper)
    protocol.style.start(debate)
    for r in range(protocol.rounds):
        debate.records.append(await protocol.style.play(debate, r))
    final = await protocol.style.finish(debate, StopReason.MAX_ROUNDS)
    result = debate_result(debate, StopReason.MAX_ROUNDS, final)
    scorer = judge or agents[0]
    context = MetricContext(scorer.backend, caller, JUDGE_NAME, unit.seed)
    if judge is not None:
        context = replace(
            context, temperature=judge.spec.sampling.temperature, max_tokens=judge.spec.sampling.max_tokens
        )
    await unit.task.metric(result, context)


async def plan_experiment(experiment: Experiment, conditions: Sequence[str] | None = None) -> Plan:
    """Bound what ``experiment`` may spend (``conditions``: only these arms', as ``--condition`` runs them),
    and read what its store holds. Loads no model and makes no call."""
    config = experiment.config
    backends: dict[str, _PlanBackend] = {}
    units = [u for u in experiment.units() if conditions is None or u.condition.name in conditions]
    played: list[tuple[Unit, list[tuple[str, PlannedCall]]]] = []
    for unit in units:
        caller = _PlanCaller(None if config.share_round0 else unit.condition.name)
        await _play(unit, backends, caller)
        played.append((unit, caller.calls))
    store = experiment._store
    done = store.done() if store is not None else {}
    pending = [(u, calls) for u, calls in played if u.key not in done]
    plans = []
    first: dict[str, PlannedCall] = {}
    owned: dict[str, list[PlannedCall]] = {c.name: [] for c in experiment.conditions}
    shared = dict.fromkeys(owned, 0)
    per_question: dict[str, int] = {}
    for unit, calls in played:
        name = unit.condition.name
        per_question[name] = max(per_question.get(name, 0), len(calls))
        for key, call in calls:
            if key in first:
                shared[name] += 1
            else:
                first[key] = call
                owned[name].append(call)
    for condition in experiment.conditions:
        name = condition.name
        count = sum(1 for u in units if u.condition.name == name)
        if count:
            plans.append(
                ConditionPlan(name, count, per_question[name], shared[name], _bound(owned[name], config.prices))
            )
    left = {key: call for _, calls in pending for key, call in calls}
    models = {c.model for c in first.values()}
    return Plan(
        tuple(plans),
        _bound(list(first.values()), config.prices),
        len(done),
        stored_spend(store, config.prices) if store is not None else Spent(),
        len(pending),
        _bound(list(left.values()), config.prices),
        tuple(sorted(m for m in models if m not in config.prices)),
    )


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    """The plan as rows (condition, questions, calls, shared, prompt, completion, cost), the total last."""
    rows: list[dict[str, Any]] = []
    for c in plan.conditions:
        b = c.bound
        rows.append(
            {
                "condition": c.name,
                "questions": c.questions,
                "calls": b.calls,
                "shared": c.shared,
                "prompt": b.prompt_tokens,
                "completion": b.completion_tokens,
                "cost": b.cost,
            }
        )
    t = plan.total
    rows.append(
        {
            "condition": "total",
            "questions": sum(c.questions for c in plan.conditions),
            "calls": t.calls,
            "shared": sum(c.shared for c in plan.conditions),
            "prompt": t.prompt_tokens,
            "completion": t.completion_tokens,
            "cost": t.cost,
        }
    )
    return rows
