"""The round loop. Every protocol runs through ``run_debate``; protocols only change its data.

validate; the schedule starts the agents; for each round the schedule plays it, the callback reports
it and the stopping rule decides; the schedule finishes (a final judge, if it has one); the
aggregation gives the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from moot.calls import Caller
from moot.debate.agents import Agent
from moot.debate.context import JUDGE_NAME, Debate
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, JudgeVerdict, RoundRecord, StopReason
from moot.errors import BackendError, ConfigError
from moot.tasks.base import Question, Task

ROUND_CONVENTION = (
    "round 0: independent answers; round r >= 1: every agent sees its peers' round r-1 replies "
    "(simultaneous update); the round count includes round 0"
)

RoundCallback = Callable[[Question, RoundRecord], None]


def _validate(protocol: ProtocolSpec, agents: Sequence[Agent], judge: Agent | None) -> None:
    if len(agents) != protocol.agents:
        raise ConfigError(f"protocol {protocol.name!r} needs {protocol.agents} agents, got {len(agents)}")
    if len({a.name for a in agents} | {JUDGE_NAME}) != len(agents) + 1:
        raise ConfigError(f"agent names must be unique and not {JUDGE_NAME!r}")
    if protocol.needs_judge and judge is None:
        raise ConfigError(f"protocol {protocol.name!r} needs a judge agent")
    if protocol.stopping.dataset_scope:
        raise ConfigError(
            f"stopping {protocol.stopping.kind!r} decides for all questions at once: run it with `moot run` (an "
            "experiment), which plays its questions round by round"
        )


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
    _validate(protocol, agents, judge)
    debate = Debate(question, task, protocol, agents, caller, seed, judge)
    protocol.style.start(debate)
    reason = StopReason.MAX_ROUNDS
    try:
        for r in range(protocol.rounds):
            record = await protocol.style.play(debate, r)
            debate.records.append(record)
            if on_round is not None:
                on_round(question, record)
            if (why := protocol.stopping.stop(debate.records)) is not None:
                reason = why
                break
        final_judge = await protocol.style.finish(debate, reason)
    except BackendError as exc:
        return DebateResult(
            question,
            protocol.name,
            tuple(debate.records),
            None,
            FinalStatus.ERROR,
            False,
            StopReason.ERROR,
            str(exc),
        )
    return debate_result(debate, reason, final_judge)


def debate_result(debate: Debate, reason: StopReason, final_judge: JudgeVerdict | None) -> DebateResult:
    """The result of a debate stopped for ``reason``: its final answer as the protocol aggregates its rounds
    (and ``final_judge``'s ruling); also what a dry run (moot.runner.plan) builds from its placeholder rounds."""
    winner, tied = debate.protocol.aggregation.final(debate.records, final_judge)
    if winner is not None:
        status = FinalStatus.ANSWERED
    elif tied:
        status = FinalStatus.ABSTAINED
    else:
        status = FinalStatus.UNPARSED
    correct = winner is not None and debate.task.score(winner, debate.question)
    return DebateResult(
        debate.question, debate.protocol.name, tuple(debate.records), winner, status, correct, reason, None, final_judge
    )
