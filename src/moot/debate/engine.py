"""The round loop. Every protocol runs through ``run_debate``; protocols only change its data."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from moot.backends.base import GenerationRequest, Message
from moot.calls import Caller
from moot.debate.agents import Agent
from moot.debate.aggregation import majority_vote, weighted_vote
from moot.debate.confidence import confidence_instruction, split_confidence
from moot.debate.diversity import (
    Candidate,
    answer_diversity,
    diversity_measure,
    select_diverse,
    similarity_function,
    text_diversity,
)
from moot.debate import liang
from moot.debate.judge import judge_messages, read_judge
from moot.debate.prompts import (
    debate_message,
    fresh_message,
    initial_messages,
    reflection_message,
    system_messages,
    vote_note,
)
from moot.debate.protocols import ProtocolSpec
from moot.debate import retention
from moot.debate.records import (
    DebateResult,
    FinalStatus,
    JudgeVerdict,
    PoolRecord,
    RetentionRecord,
    RoundRecord,
    Turn,
)
from moot.debate.uncertainty import uncertainty
from moot.debate.stopping import stop_reason
from moot.errors import BackendError, ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task

ROUND_CONVENTION = (
    "round 0: independent answers; round r >= 1: every agent sees its peers' round r-1 replies "
    "(simultaneous update); the round count includes round 0"
)
HISTORY_MODE = "chat: each agent keeps its own multi-turn history (Du et al.); fresh: one new prompt per round"
JUDGE_NAME = "judge"
MODERATOR_NAME = "moderator"
FILTER_NAME = "filter"

RoundCallback = Callable[[Question, RoundRecord], None]


def call_seed(run_seed: int, question: Question, agent: Agent, round_index: int) -> int:
    """Independent of the protocol, so paired protocols share identical round-0 calls."""
    return derive_seed(run_seed, question.id, agent.name, round_index)


async def _speak(
    agent: Agent, task: Task, question: Question, shown: tuple[Message, ...], round_index: int, seed: int,
    caller: Caller, protocol: ProtocolSpec,
) -> Turn:  # fmt: skip
    sampling = agent.spec.sampling
    request = GenerationRequest(
        messages=shown,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=seed,
        logprobs=protocol.needs_logprobs,
    )
    confidence_scale = _scale(protocol)
    reply = await caller.call(agent.backend, request, agent=agent.name, round=round_index)
    sample = reply.samples[0]
    readable, confidence = sample.text, None
    if confidence_scale is not None:
        readable, confidence = split_confidence(sample.text, confidence_scale)
    extraction = task.extract(readable)
    measured = uncertainty(sample.logprobs)
    return Turn(
        agent=agent.name,
        round=round_index,
        text=sample.text,
        answer=extraction.answer,
        parse_status=extraction.status,
        correct=extraction.answer is not None and task.score(extraction.answer, question),
        finish_reason=sample.finish_reason,
        prompt_tokens=sample.prompt_tokens,
        completion_tokens=sample.completion_tokens,
        latency_s=sample.latency_s,
        seed=seed,
        shown=shown,
        logprobs=sample.logprobs,
        confidence=confidence,
        nll=measured.nll if measured else None,
        anll=measured.anll if measured else None,
        perplexity=measured.perplexity if measured else None,
    )


def _with_cues(protocol: ProtocolSpec, message: Message) -> Message:
    """The message with the protocol's requests appended (a stated confidence)."""
    if not protocol.confidence:
        return message
    return Message(message.role, message.content + confidence_instruction(protocol.confidence_scale))


def _scale(protocol: ProtocolSpec) -> int | None:
    return protocol.confidence_scale if protocol.confidence else None


async def _diverse_round0(
    protocol: ProtocolSpec, agents: Sequence[Agent], task: Task, question: Question,
    histories: list[list[Message]], seed: int, caller: Caller,
) -> tuple[list[Turn], PoolRecord]:  # fmt: skip
    """Sample ``protocol.pool`` candidates round-robin over the agents, keep N by diversity, and give
    the k-th kept candidate to agent k as its round-0 reply."""
    n = protocol.agents
    calls = [
        _speak(
            agents[j % n], task, question, tuple(histories[j % n]), 0,
            derive_seed(seed, question.id, agents[j % n].name, 0, "pool", j), caller, protocol,
        )
        for j in range(protocol.pool)
    ]  # fmt: skip
    candidates = await asyncio.gather(*calls)
    texts = [c.text for c in candidates]
    similarity = similarity_function(protocol.similarity)
    chosen = select_diverse([Candidate(c.text, c.answer) for c in candidates], n, similarity)
    turns = [
        replace(candidates[j], agent=agents[i].name, shown=tuple(histories[i]), seed=candidates[j].seed)
        for i, j in enumerate(chosen)
    ]
    distinct, _ = answer_diversity([t.answer for t in turns])
    pool = PoolRecord(
        texts=tuple(texts),
        answers=tuple(c.answer for c in candidates),
        sources=tuple(c.agent for c in candidates),
        selected=tuple(chosen),
        answer_diversity=distinct,
        text_diversity=text_diversity([texts[j] for j in chosen], similarity),
        prompt_tokens=sum(c.prompt_tokens for c in candidates),
        completion_tokens=sum(c.completion_tokens for c in candidates),
    )
    return turns, pool


async def _ask(
    agent: Agent, name: str, messages: Sequence[Message], question: Question, round_index: int, seed: int,
    caller: Caller, step: int = 0,
) -> tuple[str, int, int, float]:  # fmt: skip
    """One call of a judge or moderator: (text, prompt tokens, completion tokens, latency)."""
    sampling = agent.spec.sampling
    request = GenerationRequest(
        messages=tuple(messages),
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=derive_seed(seed, question.id, name, round_index, step),
    )
    sample = (await caller.call(agent.backend, request, agent=name, round=round_index)).samples[0]
    return sample.text, sample.prompt_tokens, sample.completion_tokens, sample.latency_s


async def _judge(
    judge: Agent, task: Task, question: Question, turns: Sequence[Turn], round_index: int, seed: int, caller: Caller
) -> JudgeVerdict:
    messages = judge_messages(task, question, turns)
    text, prompt, completion, latency = await _ask(judge, JUDGE_NAME, messages, question, round_index, seed, caller)
    reading = read_judge(task, text)
    return JudgeVerdict(text, reading.answer, reading.confidence, prompt, completion, latency)


async def _moderate(
    moderator: Agent, task: Task, question: Question, messages: list[Message], name: str, round_index: int,
    seed: int, caller: Caller,
) -> JudgeVerdict:  # fmt: skip
    """A Liang moderator or final-judge JSON call, with one repair call if the JSON does not validate."""
    text, prompt, completion, latency = await _ask(moderator, name, messages, question, round_index, seed, caller)
    reading, calls = liang.read_moderator(text), 1
    if not reading.valid:
        repair = [*messages, Message("assistant", text), liang.REPAIR]
        text, p2, c2, l2 = await _ask(moderator, name, repair, question, round_index, seed, caller, step=1)
        reading, calls = liang.read_moderator(text), 2
        prompt, completion, latency = prompt + p2, completion + c2, latency + l2
    answer = task.extract(reading.answer_text).answer if reading.answer_text is not None else None
    return JudgeVerdict(text, answer, reading.confidence, prompt, completion, latency, reading.preference, calls)


async def _liang_round(
    protocol: ProtocolSpec, agents: Sequence[Agent], task: Task, question: Question,
    histories: list[list[Message]], previous: Sequence[Turn] | None, r: int, seed: int, caller: Caller,
) -> list[Turn]:  # fmt: skip
    """The affirmative speaks, then the negative answers it (in turn, not simultaneously)."""
    affirmative, negative = agents
    if previous is not None:
        histories[0].append(liang.rebuttal(task, previous[1].text))
    first = await _speak(
        affirmative, task, question, tuple(histories[0]), r, call_seed(seed, question, affirmative, r), caller, protocol
    )
    histories[0].append(Message("assistant", first.text))
    histories[1].append(
        liang.negative_opening(task, first.text) if previous is None else liang.rebuttal(task, first.text)
    )
    second = await _speak(
        negative, task, question, tuple(histories[1]), r, call_seed(seed, question, negative, r), caller, protocol
    )
    histories[1].append(Message("assistant", second.text))
    return [first, second]


async def _final_judge(
    judge: Agent, task: Task, question: Question, records: Sequence[RoundRecord], seed: int, caller: Caller
) -> JudgeVerdict:
    """Liang's final judge at the cap: list the candidates, then decide (two calls)."""
    last = records[-1]
    messages = [
        Message("system", liang.moderator_system(task, question)),
        liang.judge_candidates_prompt(last.turns[0].text, last.turns[1].text),
    ]
    r = len(records)
    text, prompt, completion, latency = await _ask(judge, JUDGE_NAME, messages, question, r, seed, caller)
    messages += [Message("assistant", text), liang.judge_decision_prompt(task, question)]
    verdict = await _moderate(judge, task, question, messages, JUDGE_NAME, r, seed, caller)
    return JudgeVerdict(
        verdict.text, verdict.answer, verdict.confidence, verdict.prompt_tokens + prompt,
        verdict.completion_tokens + completion, verdict.latency_s + latency, verdict.preference, verdict.calls + 1,
    )  # fmt: skip


def _next_prompts(
    protocol: ProtocolSpec, agents: Sequence[Agent], task: Task, question: Question,
    histories: list[list[Message]], previous: RoundRecord, kept: set[int],
) -> int:  # fmt: skip
    """Extend (chat) or replace (fresh) each agent's messages for the next round, forwarding only the
    ``kept`` replies; returns how many replies were forwarded in all."""
    scale, forwarded = _scale(protocol), 0
    for i, peer_ids in enumerate(protocol.topology.peers(protocol.agents)):
        agent = agents[i]
        peers = [previous.turns[j] for j in peer_ids if j in kept]
        forwarded += len(peers)
        if protocol.history == "fresh":
            message = fresh_message(
                task, question, previous.turns[i], peers, protocol.rendering, agent.spec.agreement, scale,
                protocol.uncertainty_cue,
            )  # fmt: skip
            histories[i] = system_messages(task, agent.spec.persona)
        elif peers:
            message = debate_message(
                task, peers, protocol.rendering, agent.spec.agreement, scale, protocol.uncertainty_cue
            )
        else:
            message = reflection_message(task)
        if protocol.vote_cue:
            message = Message(message.role, vote_note(previous.vote.winner) + message.content)
        histories[i].append(_with_cues(protocol, message))
    return forwarded


async def _retain(
    protocol: ProtocolSpec, helper: Agent | None, task: Task, question: Question, previous: RoundRecord,
    r: int, seed: int, caller: Caller,
) -> tuple[set[int], RetentionRecord]:  # fmt: skip
    """Which of the previous round's replies are forwarded this round (moot.debate.retention)."""
    turns, n = previous.turns, len(previous.turns)
    kept: list[int] | None
    text, calls, prompt_tokens, completion_tokens = None, 0, 0, 0
    if protocol.retention == "all":
        kept = list(range(n))
    elif protocol.retention == "perplexity-top":
        kept = retention.perplexity_top(turns, protocol.retain_fraction)
    elif protocol.retention == "distinct":
        kept = retention.distinct_answers(turns)
    else:
        assert helper is not None
        messages = retention.filter_messages(protocol.retention, task.render(question), turns, previous.vote.winner)
        text, prompt_tokens, completion_tokens, _ = await _ask(helper, FILTER_NAME, messages, question, r, seed, caller)
        calls = 1
        kept = retention.parse_ids(text, n)
    fallback = kept is None
    chosen = list(range(n)) if kept is None else kept
    measure, measure_name = diversity_measure()
    record = RetentionRecord(
        rule=protocol.retention, kept=tuple(turns[i].agent for i in chosen), fallback=fallback, forwarded=0,
        filter_text=text, filter_calls=calls, filter_prompt_tokens=prompt_tokens,
        filter_completion_tokens=completion_tokens, diversity=measure([turns[i].text for i in chosen]),
        diversity_measure=measure_name,
    )  # fmt: skip
    return set(chosen), record


async def run_debate(
    question: Question,
    task: Task,
    protocol: ProtocolSpec,
    agents: Sequence[Agent],
    *,
    caller: Caller,
    seed: int = 0,
    judge: Agent | None = None,
    on_round: RoundCallback | None = None,
) -> DebateResult:
    """Run one question under ``protocol``. A failed model call ends the question with status ``error``."""
    if len(agents) != protocol.agents:
        raise ConfigError(f"protocol {protocol.name!r} needs {protocol.agents} agents, got {len(agents)}")
    if len({a.name for a in agents} | {JUDGE_NAME}) != len(agents) + 1:
        raise ConfigError(f"agent names must be unique and not {JUDGE_NAME!r}")
    if protocol.needs_judge and judge is None:
        raise ConfigError(f"protocol {protocol.name!r} needs a judge agent")
    liang_style = protocol.style == "liang"
    if liang_style:
        histories = [[Message("system", a.spec.persona or liang.debater_system(task, question))] for a in agents]
        histories[0].append(liang.opening(task, question))
        moderator_history = [Message("system", liang.moderator_system(task, question))]
    else:
        histories = [initial_messages(task, question, a.spec.persona) for a in agents]
        for history in histories:
            history[-1] = _with_cues(protocol, history[-1])
    records: list[RoundRecord] = []
    pool: PoolRecord | None = None
    kept_record: RetentionRecord | None = None
    reason = "max_rounds"
    final_judge: JudgeVerdict | None = None
    try:
        for r in range(protocol.rounds):
            if liang_style:
                previous = records[-1].turns if records else None
                turns = await _liang_round(protocol, agents, task, question, histories, previous, r, seed, caller)
            elif r == 0 and protocol.initializer == "diverse":
                turns, pool = await _diverse_round0(protocol, agents, task, question, histories, seed, caller)
            else:
                if r > 0:
                    kept, kept_record = await _retain(protocol, judge, task, question, records[-1], r, seed, caller)
                    forwarded = _next_prompts(protocol, agents, task, question, histories, records[-1], kept)
                    kept_record = replace(kept_record, forwarded=forwarded)
                turns = await asyncio.gather(
                    *(
                        _speak(
                            a, task, question, tuple(histories[i]), r, call_seed(seed, question, a, r), caller,
                            protocol,
                        )
                        for i, a in enumerate(agents)
                    )
                )  # fmt: skip
            if not liang_style and protocol.history == "chat":
                for history, turn in zip(histories, turns):
                    history.append(Message("assistant", turn.text))
            tie_seed = derive_seed(seed, question.id, "tie", r)
            if protocol.aggregation == "confidence":
                vote = weighted_vote([t.answer for t in turns], [t.confidence for t in turns], protocol.tie_rule, tie_seed)
            else:
                vote = majority_vote([t.answer for t in turns], protocol.tie_rule, tie_seed)
            verdict = None
            if liang_style and judge is not None:
                asked = liang.moderator_prompt(
                    r, turns[0].text, turns[1].text, protocol.stopping.kind == "moderator_confidence"
                )
                verdict = await _moderate(
                    judge, task, question, [*moderator_history, asked], MODERATOR_NAME, r, seed, caller
                )
                moderator_history += [asked, Message("assistant", verdict.text)]
            elif judge is not None and protocol.stopping.kind == "judge":
                verdict = await _judge(judge, task, question, turns, r, seed, caller)
            record = RoundRecord(
                index=r, turns=tuple(turns), vote=vote, judge=verdict, pool=pool if r == 0 else None,
                retention=kept_record if r > 0 and not liang_style else None,
            )  # fmt: skip
            records.append(record)
            if on_round is not None:
                on_round(question, record)
            if (why := stop_reason(protocol.stopping, records)) is not None:
                reason = why
                break
        if liang_style and judge is not None and reason == "max_rounds":
            final_judge = await _final_judge(judge, task, question, records, seed, caller)
    except BackendError as exc:
        return DebateResult(question, protocol.name, tuple(records), None, FinalStatus.ERROR, False, "error", str(exc))
    last = records[-1]
    if protocol.aggregation == "moderator":
        source = final_judge if final_judge is not None else last.judge
        winner, tied = (source.answer if source else None), ()
    elif protocol.aggregation == "judge":
        assert last.judge is not None
        winner, tied = last.judge.answer, ()
    else:
        winner, tied = last.vote.winner, last.vote.tied
    if winner is not None:
        status = FinalStatus.ANSWERED
    elif tied:
        status = FinalStatus.ABSTAINED
    else:
        status = FinalStatus.UNPARSED
    correct = winner is not None and task.score(winner, question)
    return DebateResult(question, protocol.name, tuple(records), winner, status, correct, reason, None, final_judge)
