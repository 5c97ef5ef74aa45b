"""One real-model question per benchmark task (qwen2.5-0.5b, greedy, short replies).

The 0.5B model is weak: these tests check structure (the prompt reaches the model, the reply
is extracted and scored by the task's own rules, the judge's calls are counted), not accuracy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.backends.config import LlamaCppBackendConfig
from moot.backends.factory import make_backend
from moot.backends.local import LocalBackend
from moot.calls import Caller
from moot.debate import FinalStatus, Sampling, resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.models import TEST_MODEL
from moot.tasks import ParseStatus, get_task
from moot.tasks.biographies import Verdict, judge_biography
from moot.tasks.chess_tasks import ChessMoveTask

pytestmark = pytest.mark.model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tasks"
CONFIG = LlamaCppBackendConfig(model=TEST_MODEL, n_ctx=4096)
SAMPLING = Sampling(temperature=0.0, max_tokens=96)

# task -> local data file (None: offline data or generated)
SMOKE = {
    "gsm8k": None,
    "mmlu": None,
    "mmlu-pro-med": None,
    "mmlu-formal-logic": None,
    "csqa": None,
    "hellaswag": None,
    "arc-challenge": None,
    "gpqa": "gpqa_synthetic.csv",
    "quality": "quality_synthetic.jsonl",
    "hh-rlhf": "hh_rlhf_synthetic.jsonl",
    "chess-validity": None,
    "chess-move": None,
}


@pytest.fixture(scope="module")
def backend(tiny_model) -> Iterator[LocalBackend]:  # type: ignore[no-untyped-def]
    local = make_backend(CONFIG)
    assert isinstance(local, LocalBackend)
    yield local
    asyncio.run(local.aclose())


@pytest.mark.parametrize("name", list(SMOKE))
async def test_one_question(name: str, backend: LocalBackend) -> None:
    data = SMOKE[name]
    task = get_task(name, data=FIXTURES / data if data else None)
    question = task.questions(1, seed=0)[0]
    agent = Agent(AgentSpec(name="agent-1", backend=CONFIG, sampling=SAMPLING), backend)
    caller = Caller()
    try:
        result = await run_debate(question, task, resolve_protocol("single"), [agent], caller=caller)
        assert caller.usage.calls == 1 and result.status is not FinalStatus.ERROR
        (turn,) = result.rounds[0].turns
        assert turn.text.strip() and turn.completion_tokens > 0
        assert turn.shown[-1].content == task.render(question)
        extraction = task.read_reply(turn.text, question)  # chess-move: the move as UCI in its position
        assert (turn.answer, turn.parse_status) == (extraction.answer, extraction.status)
        assert (turn.parse_status is ParseStatus.PARSED) == (turn.answer is not None)
        assert turn.correct == (turn.answer is not None and task.score(turn.answer, question))
        assert result.final_answer == turn.answer
        if isinstance(task, ChessMoveTask) and turn.answer is not None:
            outcome = task.analyse(turn.answer, question)  # illegal moves are an outcome of their own
            assert outcome.legal == (outcome.delta_pawns is not None)
    finally:
        if isinstance(task, ChessMoveTask):
            task.close()


async def test_biography_and_its_judge(backend: LocalBackend) -> None:
    task = get_task("biographies", data=FIXTURES / "biographies.jsonl")
    question = task.questions(1, seed=0)[0]
    agent = Agent(AgentSpec(name="agent-1", backend=CONFIG, sampling=SAMPLING), backend)
    caller = Caller()
    result = await run_debate(question, task, resolve_protocol("single"), [agent], caller=caller)
    (turn,) = result.rounds[0].turns
    assert turn.parse_status is ParseStatus.PARSED and not turn.correct  # a judge scores biographies
    score = await judge_biography(turn.text, question, backend, caller)
    assert score.calls == len(question.metadata["facts"]) == 2
    assert caller.usage.calls == 1 + 2
    assert all(isinstance(v, Verdict) for v in score.verdicts)
    assert score.precision is None or 0.0 <= score.precision <= 1.0
