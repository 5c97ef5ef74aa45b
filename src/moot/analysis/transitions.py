"""What happens between rounds: transitions of correctness, answer changes, oracles, initial diversity.

Everything here is computed from ``Trajectory`` values, one per question under one
condition, so it does not depend on the store: a trajectory is every agent's answer and
correctness per round, the system's answer per round (its majority, or its judge's) and the final result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Trajectory:
    """One question under one condition, round by round (round 0 first; agents in the condition's order)."""

    agents: tuple[str, ...]
    answers: tuple[tuple[str | None, ...], ...]  # [round][agent]
    correct: tuple[tuple[bool, ...], ...]  # [round][agent]
    system_answers: tuple[str | None, ...]  # the round's aggregated answer
    system_correct: tuple[bool, ...]
    final_answer: str | None
    final_correct: bool
    rounds_used: int

    @property
    def system_changed(self) -> bool:
        """The system's answer at its last observed round differs from its round-0 answer."""
        return bool(self.system_answers) and self.system_answers[0] != self.final_answer

    @property
    def any_agent_changed(self) -> bool:
        return any(
            self.answers[r][i] != self.answers[r + 1][i]
            for r in range(len(self.answers) - 1)
            for i in range(min(len(self.answers[r]), len(self.answers[r + 1])))
        )


@dataclass(frozen=True)
class Transitions:
    """Pairs of (earlier, later) correctness: right->right, wrong->right, right->wrong, wrong->wrong."""

    n: int = 0
    right_right: int = 0
    wrong_right: int = 0
    right_wrong: int = 0
    wrong_wrong: int = 0
    changed: int = 0  # the answer itself changed (also counts wrong->wrong with a different wrong answer)

    def add(self, before: bool, after: bool, changed: bool) -> Transitions:
        return Transitions(
            self.n + 1,
            self.right_right + (before and after),
            self.wrong_right + (not before and after),
            self.right_wrong + (before and not after),
            self.wrong_wrong + (not before and not after),
            self.changed + changed,
        )

    @property
    def net(self) -> int:
        """Corrections minus regressions."""
        return self.wrong_right - self.right_wrong


@dataclass(frozen=True)
class AgentChanges:
    """One agent over consecutive rounds: how often it changed answer, and in which direction of correctness."""

    agent: str
    steps: int  # (round r, round r+1) pairs observed
    changed: int
    wrong_to_right: int
    right_to_wrong: int


@dataclass(frozen=True)
class Oracle:
    """Accuracy if the best observed answer could be picked per question, and the gap to the actual final."""

    n: int
    final: int  # questions whose final answer is right
    any_round: int  # some round's system answer was right
    any_turn: int  # some agent in some round was right

    @property
    def round_gap(self) -> int:
        return self.any_round - self.final

    @property
    def gap(self) -> int:
        """Recovery gap: questions on which a right answer was observed but not returned."""
        return self.any_turn - self.final


@dataclass(frozen=True)
class Diversity:
    """Round-0 answers: how much the agents disagree before any debate, and Pass@k."""

    n: int
    agents: int
    mean_distinct: float  # distinct parsed answers per question (unparsed replies not counted)
    unanimous: int  # questions where every agent gave the same parsed answer
    majority_correct: int  # round-0 system answer right
    pass_at: tuple[float, ...]  # pass_at[k-1]: unbiased Pass@k, k = 1..agents


def first_to_final(trajectories: Iterable[Trajectory]) -> tuple[dict[int, Transitions], Transitions]:
    """Round-0 system answer -> final answer, by rounds used (the stopping round) and in total."""
    by_round: dict[int, Transitions] = {}
    total = Transitions()
    for t in trajectories:
        if not t.system_answers:
            continue
        before = t.system_correct[0]
        step = by_round.get(t.rounds_used, Transitions())
        by_round[t.rounds_used] = step.add(before, t.final_correct, t.system_changed)
        total = total.add(before, t.final_correct, t.system_changed)
    return dict(sorted(by_round.items())), total


def round_to_round(trajectories: Iterable[Trajectory]) -> dict[int, Transitions]:
    """System answer at round r -> round r+1, keyed by r+1, over the questions that reached round r+1."""
    steps: dict[int, Transitions] = {}
    for t in trajectories:
        for r in range(len(t.system_answers) - 1):
            changed = t.system_answers[r] != t.system_answers[r + 1]
            steps[r + 1] = steps.get(r + 1, Transitions()).add(t.system_correct[r], t.system_correct[r + 1], changed)
    return dict(sorted(steps.items()))


def agent_changes(trajectories: Iterable[Trajectory]) -> list[AgentChanges]:
    """Per agent, over every consecutive pair of its rounds: answer changes, wrong->right, right->wrong."""
    counts: dict[str, list[int]] = {}
    for t in trajectories:
        for i, agent in enumerate(t.agents):
            c = counts.setdefault(agent, [0, 0, 0, 0])
            for r in range(len(t.answers) - 1):
                if i >= len(t.answers[r]) or i >= len(t.answers[r + 1]):
                    continue
                before, after = t.correct[r][i], t.correct[r + 1][i]
                c[0] += 1
                c[1] += t.answers[r][i] != t.answers[r + 1][i]
                c[2] += (not before) and after
                c[3] += before and not after
    return [AgentChanges(agent, *c) for agent, c in counts.items()]


def oracle(trajectories: Iterable[Trajectory]) -> Oracle:
    """Oracle accuracies: any round's system answer right; any agent's answer in any round right."""
    n = final = any_round = any_turn = 0
    for t in trajectories:
        n += 1
        final += t.final_correct
        any_round += t.final_correct or any(t.system_correct)
        any_turn += t.final_correct or any(any(row) for row in t.correct)
    return Oracle(n, final, any_round, any_turn)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@k from n samples of which c are right: 1 - C(n-c, k) / C(n, k) (Chen et al. 2021)."""
    if k > n:
        raise ValueError("k must not exceed n")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def initial_diversity(trajectories: Sequence[Trajectory]) -> Diversity | None:
    """Disagreement among round-0 answers and Pass@k for k = 1..agents (None without round-0 answers)."""
    rounds0 = [t for t in trajectories if t.answers]
    if not rounds0:
        return None
    agents = min(len(t.answers[0]) for t in rounds0)
    if agents == 0:
        return None
    distinct = [len({a for a in t.answers[0] if a is not None}) for t in rounds0]
    unanimous = sum(1 for t in rounds0 if None not in t.answers[0] and len(set(t.answers[0])) == 1)
    pass_at = tuple(
        sum(pass_at_k(agents, sum(t.correct[0][:agents]), k) for t in rounds0) / len(rounds0)
        for k in range(1, agents + 1)
    )
    return Diversity(
        n=len(rounds0),
        agents=agents,
        mean_distinct=sum(distinct) / len(rounds0),
        unanimous=unanimous,
        majority_correct=sum(1 for t in rounds0 if t.system_correct and t.system_correct[0]),
        pass_at=pass_at,
    )
