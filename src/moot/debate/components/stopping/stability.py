"""Stop every question at once when the agents' agreement over the whole dataset has settled (Hu et al. 2025,
adaptive stability detection; the statistics are in moot.debate.stability).

The rule is the dataset's, not a question's: after round t, each question's count of agents holding its plurality
answer is gathered over all the condition's questions, a two-component Beta-Binomial mixture is fitted to the
counts, and the debate of every question stops once the Kolmogorov-Smirnov distance between consecutive rounds'
fits has stayed below ``threshold`` for ``patience`` rounds running. The runner plays such a condition round by
round (``moot.runner.experiment``): each pass replays the stored rounds and adds one, so that no call is paid twice
and no round is played that the rule would not have played."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord
from moot.debate.registry import register


@register
class StabilityDetection(Stopping):
    kind: Literal["stability"] = "stability"
    reads_answers: ClassVar[bool] = True
    needs_peers = True
    dataset_scope = True
    threshold: float = Field(default=0.05, gt=0, le=1, description="the KS distance under which a round is stable")
    patience: int = Field(default=2, ge=1, description="consecutive stable rounds before every debate stops")

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        return None  # never per question: the runner decides for all questions (``stop_dataset``)

    def stop_dataset(self, rounds: Sequence[Sequence[RoundRecord]], agents: int) -> bool:
        """Whether every debate stops after the rounds played so far; ``rounds``: each question's rounds (every
        question has the same number). Questions without every round (a failed call) are left out of the fit."""
        from moot.debate.stability import agreement_count, stopping_round

        played = max((len(r) for r in rounds), default=0)
        complete = [r for r in rounds if len(r) == played]
        if played < self.patience + 1 or not complete:
            return False
        counts = [[agreement_count([t.answer for t in q[t_].turns]) for q in complete] for t_ in range(played)]
        trace = stopping_round(counts, agents, threshold=self.threshold, patience=self.patience)
        return trace.stop_after is not None

    def condition(self) -> str:
        return (
            f"over all questions at once: the fitted distribution of agents holding the plurality answer moved "
            f"less than {self.threshold:g} (KS) for {self.patience} rounds running (Hu et al.)"
        )
