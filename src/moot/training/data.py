"""The GRPO prompts: the harder subset of stage 1's questions as ``TrainingExample``s, rendered by the
``confidence`` protocol itself.

The prompts are not written here: each is what moot's round loop (moot.debate.engine.run_debate) shows
agent 1 under the ``confidence`` preset, obtained by replaying a debate whose agents are scripted to
say the chosen stage-1 samples. So a change of the protocol's prompts changes the training data with
it, and the model is trained on exactly what it reads in a debate.

- ``expression`` (Zhu et al., B.1): round 0, the question with the request for "Confidence: N".
- ``perception`` (B.2; rounds are Markovian, so one round is a whole input): round 1 as agent 1 of an
  N-agent debate sees it, its own round-0 reply in its chat history, then its peers' replies, each
  with its stated confidence ("One agent response (confidence 8/10): ..."), and the update request.
  Agent 1's reply and its peers' are N distinct stage-1 samples of that question, drawn with a seed
  derived from the run seed, the question and the draw, so the data are reproducible.

``peer_confidences`` are the peers' stated confidences as fractions of the scale (0.8 for "8/10").
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec, Sampling
from moot.debate.engine import run_debate
from moot.debate.protocol_presets import resolve_protocol
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import Turn
from moot.outputs import write_output
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task
from moot.training.targets import PROTOCOL, QuestionTarget
from moot.training.types import TrainingExample

_UNLIMITED = Sampling(max_tokens=1_000_000)  # the scripted replay never cuts a sample short


def harder_subset(targets: Sequence[QuestionTarget], low: float, high: float, size: int) -> list[QuestionTarget]:
    """The questions whose self-consistency accuracy lies in [low, high] (Zhu et al., appendix C: the
    harder subset, accuracy near 50%), at most ``size`` of them, in stage 1's seeded question order."""
    return [t for t in targets if low <= t.accuracy <= high][:size]


def confidence_protocol(agents: int) -> ProtocolSpec:
    """The ``confidence`` preset with ``agents`` agents and two rounds (round 0, one debate round)."""
    return resolve_protocol(PROTOCOL, agents=agents, rounds=2)


def _saying(text: str) -> Callable[[GenerationRequest, int], str]:
    """A scripted responder that says ``text`` to every request."""
    return lambda request, index: text


async def _replay(
    task: Task, question: Question, protocol: ProtocolSpec, replies: Sequence[str]
) -> list[tuple[Message, ...]]:
    backends = [ScriptedBackend(_saying(text)) for text in replies]
    agents = [
        Agent(AgentSpec(name=f"agent-{i}", backend=ScriptedBackendConfig(), sampling=_UNLIMITED), backend)
        for i, backend in enumerate(backends, 1)
    ]
    result = await run_debate(question, task, protocol, agents, caller=Caller())
    if result.error is not None:
        raise RuntimeError(f"replaying question {question.id}: {result.error}")
    return [request.messages for request in backends[0].requests]


def agent_view(
    task: Task, question: Question, protocol: ProtocolSpec, replies: Sequence[str]
) -> list[tuple[Message, ...]]:
    """Agent 1's messages in each round of ``protocol`` when agent i says ``replies[i]`` in every round:
    the protocol's own rendering, from a replay of the debate with scripted agents."""
    return asyncio.run(_replay(task, question, protocol, replies))


def _fraction(turn: Turn, scale: int) -> float | None:
    return None if turn.confidence is None else turn.confidence / scale


def expression_examples(task: Task, subset: Sequence[QuestionTarget]) -> list[TrainingExample]:
    """One example per question: the confidence preset's round 0 (any sample's text stands in for the
    reply, which round 0 does not show)."""
    protocol = resolve_protocol(PROTOCOL, agents=1, rounds=1)
    examples = []
    for target in subset:
        (messages,) = agent_view(task, target.question, protocol, [target.samples[0].text])
        examples.append(
            TrainingExample(
                question_id=target.question.id,
                task=task.name,
                stage="expression",
                messages=messages,
                gold=target.question.gold,
                target_confidence=target.accuracy,
            )
        )
    return examples


def draw_samples(target: QuestionTarget, agents: int, seed: int, draw: int) -> list[Turn]:
    """``agents`` distinct stage-1 samples of the question (agent 1's own reply first, then its peers'),
    drawn by a seed derived from (seed, question id, draw); with fewer samples than agents, some repeat."""
    rng = random.Random(derive_seed(seed, target.question.id, "perception", draw))
    pool = list(target.samples)
    if len(pool) >= agents:
        return rng.sample(pool, agents)
    return [*rng.sample(pool, len(pool)), *rng.choices(pool, k=agents - len(pool))]


def perception_examples(
    task: Task, subset: Sequence[QuestionTarget], agents: int, draws: int, seed: int
) -> list[TrainingExample]:
    """``draws`` examples per question: round 1 of an ``agents``-agent confidence debate as agent 1 sees it,
    its own round-0 reply and its peers' drawn from the question's stage-1 samples."""
    protocol = confidence_protocol(agents)
    scale = protocol.stated_confidence_scale or 10
    examples = []
    for target in subset:
        for draw in range(draws):
            chosen = draw_samples(target, agents, seed, draw)
            _, messages = agent_view(task, target.question, protocol, [t.text for t in chosen])
            peers = chosen[1:]
            examples.append(
                TrainingExample(
                    question_id=target.question.id,
                    task=task.name,
                    stage="perception",
                    messages=messages,
                    gold=target.question.gold,
                    target_confidence=target.accuracy,
                    peer_answers=tuple(t.answer or "" for t in peers),  # "": unparsed
                    peer_confidences=tuple(_fraction(t, scale) for t in peers),
                )
            )
    return examples


def example_json(example: TrainingExample) -> dict[str, Any]:
    return {
        "question_id": example.question_id,
        "task": example.task,
        "stage": example.stage,
        "messages": [m.as_dict() for m in example.messages],
        "gold": example.gold,
        "target_confidence": example.target_confidence,
        "peer_answers": list(example.peer_answers),
        "peer_confidences": list(example.peer_confidences),
    }


def write_examples(examples: Sequence[TrainingExample], path: Path) -> None:
    """One JSON line per example (to read what a stage trains on), written whole or not at all, never
    through a link (``moot.outputs.write_output``)."""
    text = "".join(json.dumps(example_json(example)) + "\n" for example in examples)
    write_output(path, lambda file: file.write_text(text, encoding="utf-8"))
