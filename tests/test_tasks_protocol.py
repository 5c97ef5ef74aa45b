"""The Task protocol: every task class satisfies it, cards and provenance, data sources, task metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.backends.base import Backend, GenerationRequest, Reply
from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec
from moot.debate.protocol_presets import resolve_protocol
from moot.errors import ConfigError
from moot.runner.evaluate import evaluate
from moot.seeds import derive_seed
from moot.tasks import TASKS, DataSource, MetricContext, Task, TaskCard, get_task, load_hub, load_local
from moot.tasks.arc import ARCChallengeTask
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.biographies import BiographiesTask
from moot.tasks.chess_tasks import ChessMoveTask, ChessValidityTask
from moot.tasks.csqa import CommonsenseQATask
from moot.tasks.free import FreeQuestionTask
from moot.tasks.gpqa import GPQATask
from moot.tasks.gsm8k import GSM8KTask
from moot.tasks.hellaswag import HellaSwagTask
from moot.tasks.hh_rlhf import HHRLHFTask
from moot.tasks.knights import KnightsTask
from moot.tasks.mmlu import MMLUTask
from moot.tasks.quality import QualityTask


def test_every_task_class_is_a_task() -> None:
    # the annotation is the check: mypy verifies that each class satisfies the protocol structurally
    tasks: list[Task] = [
        ArithmeticTask(),
        GSM8KTask(),
        MMLUTask(),
        CommonsenseQATask(),
        HellaSwagTask(),
        ARCChallengeTask(),
        GPQATask(),
        QualityTask(),
        HHRLHFTask(),
        BiographiesTask(),
        ChessValidityTask(),
        ChessMoveTask(),
        KnightsTask(),
        KnightsTask(5),
        FreeQuestionTask(ArithmeticTask()),
    ]
    assert all(isinstance(task, Task) for task in tasks)
    for name in TASKS:
        assert isinstance(get_task(name), Task)


def test_every_registered_task_has_a_card_and_a_provenance() -> None:
    for name in TASKS:
        task = get_task(name)
        card = task.card()
        assert isinstance(card, TaskCard)
        assert (card.name, card.splits, card.answer_format) == (task.name, task.splits, task.answer_instruction)
        assert card.description and card.licence and card.metric and card.source and card.offline
        assert task.provenance()["task"] == task.name
    assert get_task("arithmetic").provenance() == {"task": "arithmetic", "source": "generated"}
    assert get_task("chess-validity").provenance()["source"] == "generated"
    assert get_task("knights:5").provenance() == {"task": "knights:5", "source": "generated"}


def test_generated_tasks_read_no_data(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("{}\n")
    with pytest.raises(ConfigError, match="task arithmetic generates its questions; it reads no data file"):
        load_local(get_task("arithmetic"), path)
    with pytest.raises(ConfigError, match="task arithmetic has no Hugging Face hub dataset"):
        load_hub(get_task("arithmetic"))
    with pytest.raises(ConfigError, match="no Hugging Face hub dataset"):
        get_task("chess-move", data="hub")
    with pytest.raises(ConfigError, match="task knights generates its questions; it reads no data file"):
        load_local(get_task("knights"), path)
    arithmetic = get_task("arithmetic")
    assert arithmetic.with_source(DataSource("offline")) is arithmetic


async def test_a_task_without_a_metric_of_its_own_has_none() -> None:
    task = get_task("arithmetic")
    (question,) = task.questions(1, 0)
    agents = [Agent(AgentSpec(name="agent-1", backend=ScriptedBackendConfig()), ScriptedBackend(["7"]))]
    (result,) = (await evaluate(task, resolve_protocol("single"), agents, [question])).results
    assert await task.metric(result, MetricContext(agents[0].backend, Caller(), "judge", 0)) is None


class NamingCaller(Caller):
    """A caller that keeps the name and round of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.places: list[tuple[str, int]] = []

    async def call(self, backend: Backend, request: GenerationRequest, *, agent: str, round: int) -> Reply:
        self.places.append((agent, round))
        return await super().call(backend, request, agent=agent, round=round)


async def test_biographies_metric_is_the_judges_fact_precision_pooled_over_agents(tmp_path: Path) -> None:
    people = tmp_path / "people.jsonl"
    people.write_text(
        '{"name": "Ada Quill", "facts": ["Ada Quill was born in 1901.", "She built clocks.", "She lived in Oslo."]}\n'
    )

    def model(request: GenerationRequest, index: int) -> str:
        prompt = request.messages[-1].content
        if "Consider the following biography" in prompt:
            fact = prompt.split("consistent with the fact below?")[1].split("Give a single word")[0]
            return "Uncertain." if "Oslo" in fact else ("No." if "clocks" in fact else "Yes.")
        return "- Ada Quill was born in 1901.\n- She repaired watches."

    task = get_task("biographies", data=people)
    (question,) = task.questions(1, 0)
    backend = ScriptedBackend(model)
    agents = [Agent(AgentSpec(name=f"agent-{i}", backend=ScriptedBackendConfig()), backend) for i in (1, 2)]
    (result,) = (await evaluate(task, resolve_protocol("society", agents=2), agents, [question], seed=5)).results
    backend.requests.clear()
    caller = NamingCaller()

    metric = await task.metric(result, MetricContext(backend, caller, "judge", 5))

    assert metric is not None
    assert metric.value == pytest.approx(2 / 4)  # pooled: 2 consistent, 2 inconsistent
    assert set(metric.detail) == {"agent-1", "agent-2", "skipped_replies"} and metric.detail["skipped_replies"] == 0
    verdicts = ["consistent", "inconsistent", "uncertain"]
    assert metric.detail["agent-1"] == {"verdicts": verdicts, "precision": 0.5, "calls": 3, "skipped": None}
    # the call names, rounds and seeds the runner has always used, so that stored runs replay
    assert caller.places == [(f"judge/agent-{a}:fact-{i}", result.rounds_used) for a in (1, 2) for i in range(3)]
    assert [r.seed for r in backend.requests] == [derive_seed(5, question.id, "judge", i) for i in range(3)] * 2
    assert caller.usage.calls == 6
