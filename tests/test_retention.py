"""DAR and its baselines with scripted agents: uncertainty from log-probabilities, the uncertainty and
last-vote cues, every retention rule, the filter's fallback, and the efficiency records."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from moot.backends.base import GenerationRequest, TokenLogprob
from moot.backends.config import OpenAIBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.retention.distinct import distinct_answers
from moot.debate.components.retention.perplexity_top import perplexity_top
from moot.debate.records import ParseStatus, Turn
from moot.debate.uncertainty import uncertainty
from moot.errors import ConfigError
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import SCRIPTED, scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


def test_anll_nll_and_perplexity_hand_computed() -> None:
    logprobs = [TokenLogprob("a", -0.2), TokenLogprob("b", -1.0), TokenLogprob("c", -0.3)]
    u = uncertainty(logprobs)
    assert u is not None
    assert u.nll == pytest.approx(1.5) and u.anll == pytest.approx(0.5) and u.tokens == 3
    assert u.perplexity == pytest.approx(math.exp(0.5))
    assert uncertainty(None) is None and uncertainty([]) is None


def turn(agent: str, answer: str | None, perplexity: float | None = None) -> Turn:
    status = ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED
    return Turn(
        agent, 0, f"{agent} says {answer}", answer, status, False, "stop", 1, 1, 0.0, 0, (), perplexity=perplexity
    )


def test_perplexity_top_and_distinct_rules() -> None:
    turns = [turn("a", "1", 3.0), turn("b", "2", 1.5), turn("c", "1", 2.0), turn("d", None, None)]
    assert perplexity_top(turns, 0.5) == [1, 2]  # the two lowest perplexities, in agent order
    assert perplexity_top(turns, 0.75) == [0, 1, 2]  # ceil(3) ; the missing one ranks last
    assert perplexity_top(turns, 0.1) == [1]  # at least one
    assert distinct_answers(turns) == [0, 1, 3]  # the earliest of each answer; unparsed is one answer


def sent(agent: Agent) -> list[GenerationRequest]:
    return cast(ScriptedBackend, agent.backend).requests


def helper(*replies: str) -> Agent:
    return Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(list(replies)))


async def test_dar_keeps_the_filtered_ids_for_everyone_with_both_cues() -> None:
    agents = scripted_agents(
        *[[f"a{i} says {{final answer: {v}}}", f"b{i} 9", f"c{i} 9"] for i, v in enumerate([7, 7, 7, 12])]
    )
    filt = helper("I keep [1, 4]", "[2]")
    caller = Caller()
    result = await run_debate(QUESTION, TASK, resolve_protocol("dar"), agents, caller=caller, judge=filt)
    assert result.rounds_used == 3 and caller.usage.calls == 4 * 3 + 2
    assert all(r.logprobs for a in agents for r in sent(a))  # log-probabilities are asked for
    first = result.rounds[1].retention
    assert first is not None and first.rule == "dar" and not first.fallback
    assert first.kept == ("agent-1", "agent-4") and first.filter_calls == 1
    # agents 2 and 3 hear agents 1 and 4; agent 1 hears only agent 4; agent 4 only agent 1
    assert first.forwarded == 2 + 2 + 1 + 1
    prompt = sent(agents[1])[1].messages[-1].content
    assert "\nMajority vote from last round: 7.0\n\nThis was your most recent opinion:" in prompt  # as DAR writes it
    assert (
        "\na0 says {final answer: 7}\n\nUncertainty score (Average Negative Log Likelihood) for this response: "
        in prompt
    )
    assert "\na3 says {final answer: 12}\n" in prompt and "a2 says" not in prompt
    anll = result.rounds[0].turns[0].anll
    assert anll == pytest.approx(
        0.1 * (2 + 4 + 6 + 7 + 2) / 5
    )  # a0 says {final answer: 7} and f"response: {anll:.4f}" in prompt
    assert "This was your most recent opinion:\na1 says {final answer: 7}\n\nUncertainty score" in prompt
    only_four = sent(agents[0])[1].messages[-1].content
    assert "a3 says {final answer: 12}" in only_four and "a1 says" not in only_four
    filter_prompt = sent(filt)[0].messages[-1].content
    assert (
        "\nagent-1:\na0 says {final answer: 7}\n" in filter_prompt
        and "\nMajority vote from last round: 7.0\n" in filter_prompt
    )


async def test_an_invalid_filter_selection_falls_back_to_all_and_is_recorded() -> None:
    agents = scripted_agents(*[[f"x{i} {i}", f"y{i} {i}"] for i in range(3)])
    filt = helper("I cannot decide.")
    protocol = resolve_protocol("dar", agents=3, rounds=2)
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller(), judge=filt)
    record = result.rounds[1].retention
    assert record is not None and record.fallback and record.kept == ("agent-1", "agent-2", "agent-3")
    assert record.forwarded == 3 * 2 and record.filter_text == "I cannot decide."


async def test_mad_m2_keeps_the_more_confident_half_by_perplexity() -> None:
    # per-word log-probability is -0.1 x length: shorter words read as more certain
    agents = scripted_agents(["a 1", "r"], ["looooooong 2", "r"], ["b 3", "r"], ["veeeeeeery 4", "r"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("mad-m2", rounds=2), agents, caller=Caller())
    record = result.rounds[1].retention
    assert record is not None and record.kept == ("agent-1", "agent-3") and record.filter_calls == 0
    assert "looooooong" not in sent(agents[0])[1].messages[-1].content


async def test_dar_distinct_and_standard_debate_forward_counts() -> None:
    five, six = "{final answer: 5}", "{final answer: 6}"  # Choi's format, which the DAR presets read
    agents = scripted_agents([five, "r"], [five, "r"], [six, "r"], [five, "r"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("dar-distinct", rounds=2), agents, caller=Caller())
    record = result.rounds[1].retention
    assert record is not None and record.kept == ("agent-1", "agent-3")
    assert record.forwarded == 1 + 2 + 1 + 2
    plain = scripted_agents(["5", "r"], ["5", "r"], ["6", "r"], ["5", "r"])
    base = await run_debate(QUESTION, TASK, resolve_protocol("society", agents=4), plain, caller=Caller())
    assert base.rounds[1].retention is not None and base.rounds[1].retention.forwarded == 4 * 3


async def test_vote_and_uncertainty_prompts_alone() -> None:
    agents = scripted_agents(*[[f"{{final answer: {v}}}", "r"] for v in (5, 6, 6, 7)])
    await run_debate(QUESTION, TASK, resolve_protocol("vote-prompt", rounds=2), agents, caller=Caller())
    prompt = sent(agents[0])[1].messages[-1].content
    assert "Majority vote from last round: 6" in prompt and "Uncertainty score" not in prompt
    assert not sent(agents[0])[0].logprobs
    agents = scripted_agents(["5", "r"], ["6", "r"], ["6", "r"], ["7", "r"])
    await run_debate(QUESTION, TASK, resolve_protocol("uncertain-prompt", rounds=2), agents, caller=Caller())
    prompt = sent(agents[0])[1].messages[-1].content
    assert "Majority vote" not in prompt and prompt.count("Uncertainty score") == 4  # 3 peers and its own reply


def test_logprob_protocols_refuse_backends_without_logprobs() -> None:
    from moot.runner.config_files import parse_experiment
    from moot.runner.config_resolve import resolve

    config = parse_experiment(
        {
            "tasks": [{"name": "arithmetic", "count": 1}],
            "agent": {"backend": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "logprobs": False}},
            "conditions": [{"name": "m2", "protocol": "mad-m2"}],
        }
    )
    with pytest.raises(ConfigError, match="needs log-probabilities, but agent agent-1's backend"):
        resolve(config)
    assert OpenAIBackendConfig().logprobs


def test_retained_diversity_uses_minilm_when_installed_and_jaccard_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's measure of the kept replies (a debate does not measure them): every group's distinct
    texts in one encode call."""
    from moot.debate import embeddings
    from moot.debate.diversity import retained_diversity, text_diversity

    texts = ["The cat sat on the mat.", "A cat is sitting on a mat.", "Quantum chromodynamics describes quarks."]
    assert embeddings.available()  # the test extra installs it
    model, encoded = embeddings._model(), []

    class Counting:
        def encode(self, batch: list[str], **options: Any) -> Any:
            encoded.append(list(batch))
            return model.encode(batch, **options)

    monkeypatch.setattr(embeddings, "_model", Counting)
    (value, first, last, alone, none), name = retained_diversity([texts, texts[:2], texts[1:], texts[:1], []])
    assert name == "1 - cosine, all-MiniLM-L6-v2" and encoded == [texts]  # one call, each text once
    sims = embeddings.pairwise_similarity(texts)
    assert sims[0][1] > 0.8 > 0.2 > sims[0][2]  # paraphrases are close, unrelated text is far
    assert value == pytest.approx(((1 - sims[0][1]) + (1 - sims[0][2]) + (1 - sims[1][2])) / 3, abs=1e-6)
    assert (first, last) == (pytest.approx(1 - sims[0][1], abs=1e-6), pytest.approx(1 - sims[1][2], abs=1e-6))
    assert alone == none == 0.0 and embeddings.embedding_diversity(texts) == pytest.approx(value, abs=1e-6)
    monkeypatch.setattr(embeddings, "available", lambda: False)
    values, name = retained_diversity([texts, texts[:1]])
    assert name == "1 - token jaccard" and values == pytest.approx([text_diversity(texts), 0.0])


async def test_diverse_initialisation_can_use_embedding_similarity() -> None:
    agents = scripted_agents(
        ["The total is 10 after adding.", "The cat sat on the mat: 10", "r 1"],
        ["We add and get 10 in total.", "Quantum fields give 10", "r 2"],
    )
    protocol = resolve_protocol("diverse", agents=2, components={"similarity": "embedding"})
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    pool = result.rounds[0].pool
    assert pool is not None and pool.answers == ("10", "10", "10", "10")
    # no new answer after the first: the candidate least like it by meaning, not by shared tokens
    assert pool.selected[0] == 0 and pool.selected[1] in (2, 3)


def test_loading_the_embedding_model_prints_nothing() -> None:
    """No other library's progress bar ("Loading weights 0/103") in moot's output (issue 16)."""
    import subprocess
    import sys

    code = "from moot.debate.embeddings import embedding_diversity; print(embedding_diversity(['a b', 'c d']) > 0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("True\n", "")
