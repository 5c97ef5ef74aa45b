"""Stop after round 0 where a learned gate says debating will not help (after iMAD, Fan et al. 2026; moot.debate.gate,
docs/gate.md).

``file`` names a gate that ``moot gate train`` wrote. It is read when the condition is configured, and the gate
itself is kept among the rule's parameters (``gate``, with ``gate_file`` the path it was read from): a stored run
carries the gate it ran with, so that its store reads, reports and resumes without the file, and a changed file
is a changed condition (a run of the old gate is not resumed with the new one). After round 0 the gate reads the
round's features; where it does not debate, the debate stops (reason ``gate_no_debate``) and round 0's vote is
the answer. After any later round the rule never stops: the round cap decides.

What the configuration checks (``check``): the protocol can give every feature the gate uses (``confidence``: the
agents state one, on the gate's scale; ``anll``: the protocol asks log-probabilities), it has the gate's number of
agents, and at least two rounds. The task is not known when a protocol is configured (a condition runs on every
task of its experiment), so it is checked when a debate starts: at round 0 a gate trained on another task is a
ConfigError naming both (``verdict``, which a peer schedule calls after every round; ``moot run --dry-run`` plays
it too, so a dry run shows the error before any model call).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from moot.debate.components.stopping import Stopping
from moot.debate.gate import Gate, decide, round0_features
from moot.debate.records import JudgeVerdict, RoundRecord, StopReason, Turn
from moot.debate.registry import register
from moot.errors import ConfigError

if TYPE_CHECKING:
    from moot.debate.context import Debate
    from moot.tasks.base import Task

# gates read, by resolved path, with the file's mtime and size when read: a file read again is parsed again only
# when it changed
_LOADED: dict[str, tuple[tuple[int, int], Gate]] = {}


def load_gate(file: str | Path) -> Gate:
    """The gate in ``file``, read once per version of the file (its modification time and size)."""
    path = Path(file).expanduser()
    try:
        st = os.stat(path)
        key, stamp = str(path.resolve()), (st.st_mtime_ns, st.st_size)
    except OSError:
        return Gate.load(path)  # it says why (no such file, ...)
    known = _LOADED.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    gate = Gate.load(path)
    _LOADED[key] = (stamp, gate)
    return gate


@register
class LearnedGate(Stopping):
    kind: Literal["learned-gate"] = "learned-gate"
    reads_answers: ClassVar[bool] = True
    needs_peers = True
    file: str = Field(default="", description="the gate file `moot gate train` wrote (relative to the working folder)")
    threshold: float | None = Field(
        default=None, ge=0, le=1, description="debate when the predicted probability is above it; default the gate's"
    )
    gate: Gate | None = Field(
        default=None, description="the gate as read from `file` when the condition was configured (filled in)"
    )
    gate_file: str | None = Field(default=None, description="the `file` that `gate` was read from (filled in)")

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        """Read the gate from ``file``, unless it was read from that very file already (a stored run, or the
        rule validated again): a stored run keeps the gate it ran with, whatever the file holds now."""
        if not isinstance(data, dict):
            return data
        file = data.get("file")
        if not isinstance(file, str) or not file:
            raise ValueError("stopping 'learned-gate' needs file = the gate file `moot gate train` wrote")
        if data.get("gate") is not None and data.get("gate_file") == file:
            return data
        try:
            gate = load_gate(file)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return {**data, "gate": gate, "gate_file": file}

    @property
    def loaded(self) -> Gate:
        if self.gate is None:  # never: ``_read`` fills it in
            raise RuntimeError("stopping 'learned-gate' has no gate")
        return self.gate

    @property
    def cutoff(self) -> float:
        return self.loaded.threshold if self.threshold is None else self.threshold

    def check(self, protocol: Any) -> None:
        super().check(protocol)
        gate, where = self.loaded, f"gate {self.file}"
        if self.min_rounds != 1:
            raise ValueError("stopping 'learned-gate' decides after round 0: min_rounds must be 1")
        if protocol.rounds < 2:
            raise ValueError(
                "stopping 'learned-gate' decides after round 0 whether to debate: rounds must be at least 2"
            )
        if protocol.agents != gate.agents:
            raise ValueError(
                f"{where} was trained with {gate.agents} agents and this protocol has {protocol.agents}: its "
                "features depend on the number of agents"
            )
        if "confidence" in gate.features:
            if protocol.confidence is None:
                raise ValueError(
                    f"{where} uses feature 'confidence', but this protocol's agents state none (confidence = true)"
                )
            scale = protocol.confidence.scale
            if gate.confidence_scale is not None and scale != gate.confidence_scale:
                raise ValueError(
                    f"{where} was trained on confidences of scale 0-{gate.confidence_scale}; this protocol asks 0-{scale}"
                )
        if "anll" in gate.features and not protocol.needs_logprobs:
            raise ValueError(
                f"{where} uses feature 'anll', which needs log-probabilities, and this protocol asks none "
                "(uncertainty_cue = true asks them)"
            )

    async def verdict(self, debate: Debate, turns: Sequence[Turn], round_index: int) -> JudgeVerdict | None:
        """No verdict: at round 0, the check that the gate was trained on the debate's task."""
        if round_index == 0:
            self.check_task(debate.task)
        return None

    def check_task(self, task: Task) -> None:
        """Refuse (ConfigError) a task other than the gate's (a ``moot ask`` question read as a task counts as it)."""
        from moot.tasks.free import FreeQuestionTask

        name = task._task.name if isinstance(task, FreeQuestionTask) else task.name
        if name != self.loaded.task:
            raise ConfigError(
                f"stopping 'learned-gate': gate {self.file} was trained on task {self.loaded.task!r}, not {name!r}; "
                "train one on this task with `moot gate train`"
            )

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        if len(history) != 1:
            return None
        if decide(self.loaded, round0_features(history[0].turns), self.cutoff):
            return None
        return StopReason.GATE_SKIP

    def condition(self) -> str:
        gate = self.gate
        if gate is None:
            return "a learned gate after round 0"
        return (
            f"after round 0, debate only where gate {self.file} (task {gate.task}; features "
            f"{', '.join(gate.features)}) predicts that debate helps with probability above {self.cutoff:g}; "
            "later rounds run to the cap"
        )
