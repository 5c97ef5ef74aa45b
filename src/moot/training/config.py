"""The recipe of ``moot train confidence``: one TOML file, validated, every default that is Zhu et al.'s
(appendix B of ../shared/papers/zhu2026-demystifying-mad-confidence-diversity.txt) saying so.

The stages: ``targets`` (self-consistency samples give each training question a confidence target),
the harder ``subset`` (questions the model gets right about half the time, appendix C), then two GRPO +
LoRA stages, ``expression`` (state a calibrated confidence, B.1) and ``perception`` (use the peers'
answers and confidences in a debate round, B.2), then ``evaluation`` on held-out questions. An error
names the file and the key (``targets.samples: ...``), as moot's experiment files do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from moot.backends.config import BackendConfig, LocalBackendConfig
from moot.errors import MootError
from moot.limits import MAX_AGENTS, MAX_ROUNDS, SEED_RANGE
from moot.models import REGISTRY, unknown_model
from moot.runner.config import StrictModel
from moot.runner.config_files import _format_error, read_toml
from moot.training.types import GRPOSettings

GENERATED = "generated"  # the split of a task that generates its questions (arithmetic, chess)
TRAIN_SPLIT = "train"
# "org/name" on the Hugging Face hub (kept working for online users; nothing is downloaded here)
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


class TargetsConfig(StrictModel):
    """Stage 1: sample answers to each training question (the confidence preset's round 0) and take the
    fraction that are right as its confidence target."""

    questions: int = Field(default=5000, ge=1, description="training questions (Zhu et al.: 5k)")
    samples: int = Field(
        default=8,
        ge=2,
        le=MAX_AGENTS,
        description="answers sampled per question (moot's default: the paper does not give its count)",
    )
    temperature: float = Field(default=1.0, ge=0, le=2, description="sampling temperature (Zhu et al.: 1.0)")
    top_p: float = Field(default=0.9, gt=0, le=1, description="nucleus sampling (Zhu et al.: 0.9)")
    max_tokens: int = Field(default=512, ge=1, description="tokens per sampled answer (moot's default)")
    backend: BackendConfig | None = Field(
        default=None,
        description="the backend that samples (default: the local llama.cpp server with the model, "
        "which must then be a registered model or a GGUF file)",
    )
    split: str | None = Field(
        default=None, description='the training split (default "train"; a generated task: its generated questions)'
    )
    seed: int = Field(default=0, ge=SEED_RANGE[0], le=SEED_RANGE[1], description="question order and sampling seeds")
    concurrency: int | None = Field(default=None, ge=1, description="questions in flight (default: per backend)")


class SubsetConfig(StrictModel):
    """The harder subset (Zhu et al., appendix C): questions whose self-consistency accuracy lies in
    [low, high], so that the GRPO groups have both right and wrong answers to learn from."""

    low: float = Field(default=0.2, ge=0, le=1, description='lowest accuracy kept (the paper: "closer to 50%")')
    high: float = Field(default=0.8, ge=0, le=1, description="highest accuracy kept")
    size: int = Field(default=10000, ge=1, description="at most this many questions (Zhu et al.: 10k)")

    @model_validator(mode="after")
    def _band(self) -> SubsetConfig:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


class StageConfig(GRPOSettings):
    """One GRPO + LoRA stage (GRPOSettings: LoRA rank 64 as Zhu et al.), which can be switched off."""

    enabled: bool = Field(default=True, description="run this stage")

    def settings(self) -> GRPOSettings:
        """The GRPO settings alone, as train_grpo takes them."""
        return GRPOSettings(**self.model_dump(exclude={"enabled", "agents", "draws"}))


class PerceptionConfig(StageConfig):
    """Stage ``perception`` (Zhu et al., B.2): one debate round of the confidence preset, its peers' replies
    drawn from the question's stage-1 samples."""

    agents: int = Field(
        default=3,
        ge=2,
        le=MAX_AGENTS,
        description="agents of the rendered round, the trained one included (the preset's 3)",
    )
    draws: int = Field(default=1, ge=1, description="examples per question, each with other peers drawn")


class RewardConfig(StrictModel):
    """The weights of the reward parts (the paper gives none: moot's defaults) and what calibration scores."""

    correctness: float = Field(default=1.0, ge=0, description="1 for a right answer, 0 otherwise")
    calibration: float = Field(default=1.0, ge=0, description="negative Brier score of the stated confidence")
    engagement: float = Field(default=0.5, ge=0, description="perception only: referring to peers and confidence")
    calibration_target: Literal["correctness", "self-consistency"] = Field(
        default="correctness",
        description="the Brier score against the reply's own correctness, or against the question's "
        "self-consistency accuracy (the stage-1 target)",
    )


class EvaluationConfig(StrictModel):
    """Held-out questions debated by the base model and by the trained one (the hf backend), paired, for
    Zhu et al.'s Table 6 (Brier, ECE, AUROC, accuracy of stated confidence) through ``moot report``."""

    enabled: bool = True
    questions: int = Field(default=100, ge=1, description="held-out questions (moot's default)")
    split: str | None = Field(
        default=None,
        description="their split (default: the task's first, e.g. test; when it is the training split, the "
        "questions after the training ones in the same seeded order)",
    )
    protocol: str = Field(default="confidence", description="the preset debated (Zhu et al.'s confidence-modulated)")
    agents: int | None = Field(default=None, ge=1, le=MAX_AGENTS, description="default: the preset's")
    rounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS, description="default: the preset's")
    temperature: float = Field(default=1.0, ge=0, le=2, description="Zhu et al.: 1.0")
    top_p: float = Field(default=0.9, gt=0, le=1, description="Zhu et al.: 0.9")
    max_tokens: int = Field(default=512, ge=1)
    backend: dict[str, Any] = Field(
        default_factory=dict, description="more options of the hf backend (e.g. n_threads, dtype)"
    )


class TrainConfig(StrictModel):
    """``moot train confidence CONFIG.toml``: the whole recipe."""

    model: str = Field(description="a registered moot model, a GGUF file, a Hugging Face folder or a hub id")
    task: str = Field(description="a moot task with a training split (see `moot tasks`)")
    data: str | None = Field(default=None, description='"hub", or a local JSONL/CSV file in the task\'s schema')
    output: Path = Field(description="the folder of every stage's output (created; its parent must exist)")
    targets: TargetsConfig = Field(default_factory=TargetsConfig, validate_default=True)
    subset: SubsetConfig = SubsetConfig()
    expression: StageConfig = StageConfig()
    perception: PerceptionConfig = PerceptionConfig()
    rewards: RewardConfig = RewardConfig()
    evaluation: EvaluationConfig = EvaluationConfig()

    @field_validator("model")
    @classmethod
    def _known_model(cls, model: str) -> str:
        check_training_model(model)
        return model

    @field_validator("task")
    @classmethod
    def _known_task(cls, name: str) -> str:
        from moot.tasks import get_task

        try:
            get_task(name)
        except MootError as exc:
            raise ValueError(str(exc)) from None
        return name

    @field_validator("data")
    @classmethod
    def _readable_data(cls, data: str | None, info: ValidationInfo) -> str | None:
        if data is not None and "task" in info.data:
            _task(info.data["task"], data)
        return data

    @field_validator("targets")
    @classmethod
    def _training_split_and_backend(cls, targets: TargetsConfig, info: ValidationInfo) -> TargetsConfig:
        if not {"task", "model", "data"} <= info.data.keys():
            return targets  # the task, model or data is already refused
        task = _task(info.data["task"], info.data.get("data"))
        split = targets.split if targets.split is not None else default_training_split(task.splits)
        if split not in task.splits:
            raise ValueError(
                f"task {task.name} has no training split {split!r} (its splits: {', '.join(task.splits)}); "
                "choose a task with one (see `moot tasks`), or name a split with targets.split"
            )
        if targets.backend is None and not serves_locally(info.data["model"]):
            raise ValueError(
                f"backend: the default local backend serves registered models and GGUF files, not "
                f'{info.data["model"]!r}; name one (e.g. kind = "hf", or kind = "openai" with a server)'
            )
        return targets

    @field_validator("evaluation")
    @classmethod
    def _evaluation_split(cls, evaluation: EvaluationConfig, info: ValidationInfo) -> EvaluationConfig:
        if evaluation.split is not None and "task" in info.data:
            task = _task(info.data["task"], info.data.get("data"))
            if evaluation.split not in task.splits:
                raise ValueError(f"split: task {task.name} has splits {', '.join(task.splits)}")
        return evaluation

    def load_task(self) -> Any:
        """The task, reading ``data`` when given (a file is read and checked now)."""
        from moot.tasks import get_task

        return get_task(self.task, self.data)

    def training_split(self) -> str:
        """The split training questions come from: ``targets.split``, else "train" (a generated task: its
        generated questions; a local file: the file)."""
        if self.targets.split is not None:
            return self.targets.split
        return default_training_split(self.load_task().splits)

    def evaluation_split(self) -> str:
        """The held-out questions' split: ``evaluation.split``, else the task's first."""
        if self.evaluation.split is not None:
            return self.evaluation.split
        return str(self.load_task().splits[0])

    def sampling_backend(self) -> BackendConfig:
        """The backend of stage 1: ``targets.backend``, else the local server with the model."""
        return self.targets.backend or LocalBackendConfig(model=self.model)


def default_training_split(splits: tuple[str, ...]) -> str:
    """ "train"; for a task that generates its questions, "generated"; for a local file, "file"."""
    return splits[0] if splits in ((GENERATED,), ("file",)) else TRAIN_SPLIT


def _task(name: str, data: str | None) -> Any:
    from moot.tasks import get_task

    try:
        return get_task(name, data)
    except MootError as exc:
        raise ValueError(str(exc)) from None


def serves_locally(model: str) -> bool:
    """Whether moot's local (llama.cpp) backends serve ``model``: a registered name or a GGUF file."""
    return model in REGISTRY or (Path(model).expanduser().is_file() and model.lower().endswith(".gguf"))


def check_training_model(model: str) -> None:
    """Refuse a model the recipe cannot name: neither registered, nor an existing GGUF file or Hugging Face
    folder, nor shaped like a hub id ("org/name"). A misspelt registered name gets a did-you-mean."""
    if model in REGISTRY:
        return
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{model}: a folder without config.json is not a Hugging Face model")
        return
    if path.is_file():
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ValueError(f"{model}: not a GGUF file (no GGUF magic bytes) nor a Hugging Face folder")
        return
    looks_local = model.startswith((".", "/", "~")) or model.lower().endswith(".gguf")
    if looks_local:
        raise ValueError(f"{model}: no such file or folder")
    if not _HUB_ID.fullmatch(model):
        raise ValueError(unknown_model(model).replace("nor a GGUF file", "nor a GGUF file, a folder or a hub id"))


def parse_train_config(data: dict[str, Any], source: str = "training config") -> TrainConfig:
    """Validate a training table; one ConfigError naming ``source`` and each problem's key."""
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise _format_error(exc, source) from None


def load_train_config(path: Path) -> TrainConfig:
    """Read and validate a training TOML file."""
    return parse_train_config(read_toml(path), str(path))
