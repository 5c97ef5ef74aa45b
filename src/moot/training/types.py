"""The records the training stages pass to each other: examples, reward parts, GRPO settings, results.

Kept apart from the stages so that the data builder, the rewards and the GRPO driver depend on these
types only, not on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from moot.backends.base import Message

Stage = Literal["expression", "perception"]


@dataclass(frozen=True)
class TrainingExample:
    """One GRPO prompt: the messages an agent sees, and what its reply is scored against.

    ``expression`` examples are a single question (Zhu et al. B.1); ``perception`` examples are one
    debate round as the confidence protocol renders it, the question plus peers' answers and stated
    confidences (B.2; rounds are Markovian, so one turn is a whole input). ``target_confidence`` is
    the question's self-consistency accuracy from the targets stage, in [0, 1].
    """

    question_id: str
    task: str
    stage: Stage
    messages: tuple[Message, ...]
    gold: str
    target_confidence: float | None = None
    peer_answers: tuple[str, ...] = ()
    peer_confidences: tuple[float | None, ...] = ()


class RewardPart(Protocol):
    """One named part of the reward; the total is the weighted sum of the parts."""

    name: str
    weight: float

    def __call__(self, example: TrainingExample, completion: str) -> float: ...


class GRPOSettings(BaseModel):
    """One GRPO + LoRA stage's settings (trl's GRPOTrainer, peft's LoraConfig); defaults: Zhu et al.'s
    LoRA rank 64, the rest trl's or sized for a CPU smoke run where the paper is silent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: int = Field(default=200, ge=1, description="optimizer steps")
    learning_rate: float = Field(default=1e-5, gt=0)
    lora_rank: int = Field(default=64, ge=1, description="LoRA rank (Zhu et al.: 64)")
    lora_alpha: int = Field(default=128, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    prompts_per_step: int = Field(default=4, ge=1, description="distinct prompts in one optimizer step")
    generations: int = Field(default=4, ge=2, description="completions per prompt (the GRPO group)")
    max_completion_tokens: int = Field(default=256, ge=1)
    temperature: float = Field(default=1.0, gt=0, description="sampling of the group (Zhu et al.: 1.0)")
    top_p: float = Field(default=0.9, gt=0, le=1, description="Zhu et al.: 0.9")
    beta: float = Field(default=0.0, ge=0, description="KL penalty to the reference model (trl default 0)")
    save_steps: int = Field(default=10, ge=1, description="a resumable checkpoint every this many steps")
    seed: int = 0


@dataclass(frozen=True)
class StepRecord:
    """One logged optimizer step: the mean total reward, each part's mean, and time so far."""

    step: int
    reward: float
    parts: Mapping[str, float]
    elapsed_s: float


@dataclass(frozen=True)
class GRPOResult:
    """What a stage left on disk: the final adapter, the reward history, its plot and table."""

    adapter_dir: Path
    steps: int
    history: tuple[StepRecord, ...] = field(default_factory=tuple)
    curve_png: Path | None = None
    curve_csv: Path | None = None
