"""moot's real debate engine, driven by agents that follow the Dirichlet-categorical model.

Each agent's backend reads what the engine shows it: its own earlier replies (its chat history)
and, in every debate prompt, its peers' previous replies inside ```...``` (Du et al.'s wording).
From these it rebuilds its Dirichlet counts (prior + one count, or the stated confidence, per
answer heard), then draws theta ~ Dir(alpha) and an answer y ~ Cat(theta) with a numpy
generator seeded from the request's seed, and replies, e.g.
"Belief in answer 0: 0.400000000000. Confidence: 0.713000000000. The answer is 2."
The arithmetic task's extractor reads the last number, so the engine scores the answer against
gold "0" and takes its majority vote as usual.

The backend is stateless (everything comes from the messages), so it is safe under the engine's
concurrency. Comparing the engine's outcomes with the simulator's (:func:`compare`) checks the
two against each other: the engine's message plumbing, vote and scoring against the model, and
the simulator's collapsed draw y ~ Cat(alpha / sum(alpha)) against the explicit theta draw here.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from moot.backends.base import GenerationRequest, Message, Reply, Sample
from moot.backends.config import ScriptedBackendConfig
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec
from moot.debate.engine import run_debate
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult
from moot.errors import BackendError, ConfigError
from moot.seeds import derive_seed
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question, Task
from moot.theory.experiments import Estimate, estimate
from moot.theory.model import CORRECT, DebateModel, Simulation

_PEER = re.compile(r"```(.*?)```", re.DOTALL)
_REPLY = re.compile(r"Confidence: (\d+(?:\.\d+)?)\. The answer is (\d+)\.$")
_BELIEF = re.compile(r"Belief in answer 0: (\d+(?:\.\d+)?)")
TASK: Task = ArithmeticTask(system_prompt=None)


def reply_text(belief: float, confidence: float, answer: int) -> str:
    """A model-agent's reply: its belief before answering, its confidence, then its answer (the last number)."""
    return f"Belief in answer 0: {belief:.12f}. Confidence: {confidence:.12f}. The answer is {answer}."


def read_reply(text: str) -> tuple[int, float]:
    """(answer, confidence) of a model-agent's reply (the engine reads the same answer with the task's extractor)."""
    match = _REPLY.search(text)
    if match is None:
        raise BackendError(f"not a Dirichlet agent's reply: {text[:80]!r}")
    return int(match.group(2)), float(match.group(1))


class DirichletBackend:
    """A backend whose replies follow the Dirichlet-categorical model for agent ``agent`` of ``model``."""

    name = "dirichlet"

    def __init__(self, model: DebateModel, agent: int):
        self._model = model
        self._prior = model.priors()[agent]

    @property
    def model_id(self) -> str:
        return "dirichlet-categorical"

    @property
    def supports_logprobs(self) -> bool:
        return False

    @property
    def parallel(self) -> int:
        return 64

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def counts(self, messages: Sequence[Message]) -> NDArray[np.float64]:
        """The agent's Dirichlet counts after what it was shown: prior + its own earlier answers
        (when ``include_self``) + every peer answer in the debate prompts, weighted per the model."""
        alpha: NDArray[np.float64] = self._prior.copy()
        weighted = self._model.weighting == "confidence"
        user_turns = 0
        for message in messages:
            if message.role == "assistant":
                heard = [message.content] if self._model.include_self else []
            elif message.role == "user":
                user_turns += 1
                heard = _PEER.findall(message.content) if user_turns > 1 else []  # the first is the question
            else:
                continue
            for text in heard:
                answer, confidence = read_reply(text)
                alpha[answer] += confidence if weighted else 1.0
        return alpha

    async def generate(self, request: GenerationRequest) -> Reply:
        alpha = self.counts(request.messages)
        belief = float(alpha[CORRECT] / alpha.sum())
        samples = []
        for index in range(request.n):
            seed = request.seed if index == 0 or request.seed is None else derive_seed(request.seed, index)
            rng = np.random.default_rng(seed)
            theta = rng.dirichlet(alpha)
            answer = int(rng.choice(alpha.shape[0], p=theta))
            confidence = float(self._model.confidence.sample(rng, np.array(answer == CORRECT)))
            text = reply_text(belief, confidence, answer)
            samples.append(Sample(text, "stop", 0, len(text.split()), 0.0))
        return Reply(samples=tuple(samples), model=self.model_id)


def engine_setup(model: DebateModel) -> tuple[ProtocolSpec, list[Agent]]:
    """The engine protocol (chat history, Du et al.'s peer rendering, fixed rounds) and agents equivalent to ``model``."""
    if model.init != "random":
        raise ConfigError("the engine draws round-0 answers independently: use random initialisation")
    protocol = ProtocolSpec(
        name="dirichlet-categorical",
        agents=model.agents,
        rounds=model.rounds,
        topology=model.topology,
        tie_rule=model.tie_rule,
    )
    agents = [
        Agent(AgentSpec(name=f"agent-{i}", backend=ScriptedBackendConfig()), DirichletBackend(model, i))
        for i in range(model.agents)
    ]
    return protocol, agents


async def run_engine_async(model: DebateModel, debates: int, seed: int = 0) -> list[DebateResult]:
    """``debates`` questions (gold "0") debated by model-agents through moot.debate.engine.run_debate."""
    protocol, agents = engine_setup(model)
    questions = [
        Question(id=f"dcm-{i}", prompt=f"Which answer, 0 to {model.answers - 1}?", gold="0") for i in range(debates)
    ]
    caller = Caller()
    results = await asyncio.gather(
        *(run_debate(q, TASK, protocol, agents, caller=caller, seed=seed) for q in questions)
    )
    failed = [r for r in results if r.error]
    if failed:
        raise BackendError(f"{len(failed)} engine debates failed, e.g. {failed[0].error}")
    return list(results)


def engine_simulation(model: DebateModel, debates: int, seed: int = 0) -> Simulation:
    """Run the engine and read its records into a :class:`Simulation` (the belief after the last
    round's update is never shown to the engine, so that row is NaN)."""
    results = asyncio.run(run_engine_async(model, debates, seed))
    rounds = model.rounds
    belief = np.full((rounds + 1, debates), np.nan)
    correct = np.zeros((rounds, debates), dtype=np.int16)
    majority = np.zeros((rounds, debates), dtype=np.bool_)
    top = np.zeros((rounds, debates), dtype=np.int16)
    for d, result in enumerate(results):
        for record in result.rounds:
            t = record.index
            beliefs = [float(_BELIEF.search(turn.text).group(1)) for turn in record.turns]  # type: ignore[union-attr]
            belief[t, d] = sum(beliefs) / len(beliefs)
            correct[t, d] = sum(bool(turn.correct) for turn in record.turns)
            winner = record.vote.winner
            majority[t, d] = winner is not None and TASK.score(winner, result.question)
            top[t, d] = max((count for _, count in record.vote.counts), default=0)
    return Simulation(model, belief, correct, majority, top, correct[0] > 0)


@dataclass(frozen=True)
class Agreement:
    """One statistic as estimated from the engine's debates and from the simulator's, and the
    two-sample z of their difference (see :func:`two_sample_z`)."""

    statistic: str
    engine: Estimate
    simulator: Estimate
    z: float


def two_sample_z(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """z = (mean_a - mean_b) / (s * sqrt(1/n_a + 1/n_b)), s² the pooled within-sample variance.

    The test of equal means under the hypothesis that both samples come from one distribution;
    pooling keeps it well defined for rare events, where the smaller sample may hold none.
    Statistics that do not vary (s below 1e-12, e.g. the prior belief of round 0) must agree to 1e-9.
    """
    n_a, n_b = a.shape[0], b.shape[0]
    gap = float(a.mean() - b.mean())
    pooled = (float(((a - a.mean()) ** 2).sum()) + float(((b - b.mean()) ** 2).sum())) / (n_a + n_b - 2)
    s = math.sqrt(pooled)
    if s < 1e-12:
        return 0.0 if abs(gap) < 1e-9 else math.copysign(math.inf, gap)
    return gap / (s * math.sqrt(1.0 / n_a + 1.0 / n_b))


def compare(engine: Simulation, simulator: Simulation) -> list[Agreement]:
    """Per round: mean belief, share of correct answers, majority accuracy, the plurality answer's share of
    the votes and unanimity, each estimated from the engine and from the simulator."""
    agents = engine.model.agents
    rows = []
    for t in range(engine.model.rounds):
        for name, e, s in (
            ("mean belief", engine.belief[t], simulator.belief[t]),
            ("correct answers", engine.correct[t] / agents, simulator.correct[t] / agents),
            ("majority correct", engine.majority[t], simulator.majority[t]),
            ("plurality share", engine.top[t] / agents, simulator.top[t] / agents),
            ("unanimous", engine.top[t] == agents, simulator.top[t] == agents),
        ):
            a, b = np.asarray(e, dtype=np.float64), np.asarray(s, dtype=np.float64)
            rows.append(Agreement(f"round {t} {name}", estimate(a), estimate(b), two_sample_z(a, b)))
    return rows
