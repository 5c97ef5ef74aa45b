"""A learned debate gate (after iMAD, Fan et al. 2026): after round 0, debate only where a classifier on round 0
predicts that debating will help. Pure functions and the gate's file; ``moot gate`` (moot.gate_cli) trains and shows
one, stopping rule ``learned-gate`` (moot.debate.components.stopping.learned_gate) applies one. See docs/gate.md.

Features of a round 0 (``round0_features``), each over the agents' round-0 turns:

- ``agreement``: the share of agents giving the plurality parsed answer (0 when none is parsed);
- ``entropy``: the Shannon entropy, in bits, of the answers' distribution, every unparsed reply counted in one
  category of its own;
- ``unparsed``: the share of replies with no parsed answer;
- ``confidence``: the mean stated confidence, over the agents that stated one, on the protocol's scale (None when
  none did, or none was asked);
- ``length``: the mean completion tokens of a reply;
- ``anll``: the mean average negative log-likelihood per token, over the replies that have one (None without
  log-probabilities).

The label of a stored result (``GateRow.helps``): debating helped, i.e. round 0's majority vote (``majority_vote``
over the round-0 answers, ties to the earliest agent) is wrong and the debate's final answer is right. A result
whose debate did not run (an error, or a debate stopped after round 0) is left out: what debating would have given
is unknown.

The model (``train``): a logistic regression with an L2 penalty (C = 1) on standardised features, its classes
weighted inversely to their counts (``class_weight="balanced"``: "debate helps" is rare, and unweighted the
regression learns to say "never" and saves everything). A feature absent from every training row (no confidence
asked, no log-probabilities) or with one value throughout is left out: nothing can be learned from it. A missing
value (a training row or a debate where no agent stated a confidence) is imputed with the training mean, i.e. it
contributes nothing to the prediction. The gate debates a question when its predicted probability is above the
threshold (0.5 by default).

Cross-validation is by question (``StratifiedGroupKFold`` over the question, classes spread over the folds): the
same question under several seeds, or in several stores, is never on both sides of a split. The reported accuracy
of the gated system is the mean, over the results, of the final answer's correctness where the out-of-fold gate
debates and round 0's vote's where it does not; beside it the oracle gate (debate exactly where it helps), always
debating and never debating, on the same results.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from moot.debate.components.aggregation import majority_vote
from moot.debate.records import FinalStatus, Turn
from moot.errors import ConfigError

if TYPE_CHECKING:
    from moot.runner.records import StoredResult

GATE_FORMAT: Literal["moot-gate"] = "moot-gate"  # what a gate file says it is
GATE_VERSION = 1
MAX_GATE_BYTES = 1 << 20  # a gate file is a few hundred bytes: anything larger is not one
FEATURES = ("agreement", "entropy", "unparsed", "confidence", "length", "anll")
LABEL = (
    "debate helps: round 0's majority vote (ties to the earliest agent) is wrong and the debate's final answer is right"
)
C = 1.0  # the logistic regression's inverse L2 penalty (scikit-learn's default)
MODEL = f"logistic regression (L2, C = {C:g}) on standardised features, classes weighted by their inverse counts"


def round0_features(turns: Sequence[Turn]) -> dict[str, float | None]:
    """The features of a round 0 (the agents' round-0 turns), by name, in ``FEATURES`` order."""
    if not turns:
        raise ValueError("round 0 has no turn")
    n = len(turns)
    parsed = [t.answer for t in turns if t.answer is not None]
    counts = Counter(parsed)
    categories = list(counts.values()) + ([n - len(parsed)] if len(parsed) < n else [])
    entropy = -sum(c / n * math.log2(c / n) for c in categories)
    confidences = [t.confidence for t in turns if t.confidence is not None]
    anlls = [t.anll for t in turns if t.anll is not None]
    return {
        "agreement": max(counts.values()) / n if counts else 0.0,
        "entropy": entropy + 0.0,  # never -0.0
        "unparsed": (n - len(parsed)) / n,
        "confidence": sum(confidences) / len(confidences) if confidences else None,
        "length": sum(t.completion_tokens for t in turns) / n,
        "anll": sum(anlls) / len(anlls) if anlls else None,
    }


def round0_correct(turns: Sequence[Turn]) -> bool:
    """Whether round 0's majority vote (``majority_vote``, ties to the earliest agent) is right: its winner is the
    answer of a turn the task scored right (as the runner scored it). No parsed answer is wrong."""
    winner = majority_vote([t.answer for t in turns], "first").winner
    return winner is not None and any(t.answer == winner and bool(t.correct) for t in turns)


class CrossValidation(BaseModel):
    """The gate's out-of-fold figures over its training results (see the module's docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    folds: int = Field(ge=2)
    seed: int
    gate: float = Field(ge=0, le=1, description="accuracy of the gated system, each result decided out of fold")
    oracle: float = Field(ge=0, le=1, description="accuracy when debating exactly where it helps")
    always: float = Field(ge=0, le=1, description="accuracy when every question is debated (the final answers)")
    never: float = Field(ge=0, le=1, description="accuracy when none is (round 0's majority votes)")
    saving: float = Field(ge=0, le=1, description="share of results the out-of-fold gate does not debate")
    label_accuracy: float = Field(ge=0, le=1, description="share of results whose label it predicts")


class Gate(BaseModel):
    """A trained gate, as its JSON file holds it (``save``, ``load``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    format: Literal["moot-gate"] = GATE_FORMAT
    version: int = GATE_VERSION
    task: str = Field(min_length=1, description="the task it was trained on; it gates only that task")
    condition: str = Field(default="", description="the stored condition its results come from")
    stores: tuple[str, ...] = Field(default=(), description="the run stores it was trained on")
    protocol: str = Field(default="", description="the training condition's protocol")
    agents: int = Field(ge=1, description="agents of the training condition: the features depend on their number")
    rounds: int = Field(default=2, ge=2, description="the training condition's rounds, round 0 counted")
    confidence_scale: int | None = Field(default=None, description="the training condition's confidence scale")
    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]  # of each feature over the training results: its centre, and a missing value's
    scales: tuple[float, ...]  # of each feature: its standard deviation over the training results
    threshold: float = Field(default=0.5, ge=0, le=1, description="debate when the probability is above it")
    label: str = LABEL
    model: str = MODEL
    results: int = Field(default=0, ge=0, description="training results (question x seed x store)")
    questions: int = Field(default=0, ge=0, description="distinct questions among them")
    positives: int = Field(default=0, ge=0, description="results where debate helped")
    cv: CrossValidation | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Gate:
        sizes = {len(self.features), len(self.coefficients), len(self.means), len(self.scales)}
        if len(sizes) != 1:
            raise ValueError("features, coefficients, means and scales must have one entry per feature")
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown feature {unknown[0]!r}; features: {', '.join(FEATURES)}")
        if len(set(self.features)) != len(self.features):
            raise ValueError("a feature is named twice")
        if any(s <= 0 for s in self.scales):
            raise ValueError("every scale must be positive")
        return self

    @classmethod
    def load(cls, path: str | Path) -> Gate:
        """The gate in the JSON file at ``path``; a ConfigError naming the file if there is none, or it is not a
        gate of this version."""
        path = Path(path)
        try:
            if path.stat().st_size > MAX_GATE_BYTES:
                raise ConfigError(f"gate file {path}: not a moot gate (larger than {MAX_GATE_BYTES:,} bytes)")
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            raise ConfigError(f"gate file {path}: no such file") from None
        except IsADirectoryError:
            raise ConfigError(f"gate file {path}: is a folder") from None
        except OSError as exc:
            raise ConfigError(f"gate file {path}: cannot read it ({exc.strerror or exc})") from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ConfigError(f"gate file {path}: not a moot gate (not JSON)") from None
        if not isinstance(data, dict) or data.get("format") != GATE_FORMAT:
            raise ConfigError(f'gate file {path}: not a moot gate (no "format": "{GATE_FORMAT}")')
        if data.get("version") != GATE_VERSION:
            raise ConfigError(
                f"gate file {path}: a gate of version {data.get('version')!r}; this moot reads version "
                f"{GATE_VERSION}: train it again with `moot gate train`"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f"{'.'.join(str(p) for p in first['loc'])}: " if first["loc"] else "")
            raise ConfigError(
                f"gate file {path}: invalid gate ({where}{first['msg'].removeprefix('Value error, ')})"
            ) from None

    def save(self, path: str | Path) -> Path:
        """Write the gate to ``path`` as JSON, whole or not at all (moot.outputs.write_output: never through a
        link). The caller decides whether an existing file may be replaced (``moot.outputs.check_output``)."""
        from moot.outputs import write_output

        text = self.model_dump_json(indent=2) + "\n"
        return write_output(Path(path), lambda target: Path(target).write_text(text, encoding="utf-8"))


def predict(gate: Gate, features: Mapping[str, float | None]) -> float:
    """The probability that debating helps, for round-0 ``features`` (``round0_features``). A feature the gate uses
    that is missing or None is imputed with the training mean (it adds nothing)."""
    logit = gate.intercept
    for name, coefficient, mean, scale in zip(gate.features, gate.coefficients, gate.means, gate.scales, strict=True):
        value = features.get(name)
        if value is not None and math.isfinite(value):
            logit += coefficient * (value - mean) / scale
    return _sigmoid(logit)


def decide(gate: Gate, features: Mapping[str, float | None], threshold: float | None = None) -> bool:
    """Whether to debate: the predicted probability is above the threshold (the gate's, unless one is given)."""
    return predict(gate, features) > (gate.threshold if threshold is None else threshold)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# -- training data ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateRow:
    """One stored result as training data: its round-0 features, round 0's vote's correctness (``c0``) and the
    debate's (``c1``)."""

    task: str
    question: str
    seed: int
    features: Mapping[str, float | None]
    c0: bool
    c1: bool
    agents: int
    source: str = ""  # the store it was read from

    @property
    def group(self) -> tuple[str, str]:
        """The question, whatever its seed or store: what cross-validation never splits."""
        return (self.task, self.question)

    @property
    def helps(self) -> bool:
        """The label: round 0's vote is wrong and the debate's final answer right."""
        return not self.c0 and self.c1


LEFT_OUT_ERROR = "a model call failed"
LEFT_OUT_STOPPED = "stopped after round 0 (no debate round)"


def gate_row(stored: StoredResult, source: str = "") -> GateRow | str:
    """``stored`` as a training row, or why it is left out (``LEFT_OUT_ERROR``, ``LEFT_OUT_STOPPED``)."""
    result = stored.result
    if result.status == FinalStatus.ERROR or not result.rounds:
        return LEFT_OUT_ERROR
    if len(result.rounds) < 2:
        return LEFT_OUT_STOPPED
    turns = result.rounds[0].turns
    return GateRow(
        task=stored.task,
        question=result.question.id,
        seed=stored.seed,
        features=round0_features(turns),
        c0=round0_correct(turns),
        c1=result.correct,
        agents=len(turns),
        source=source,
    )


# -- training ------------------------------------------------------------------------------------------------------


def usable_features(rows: Sequence[GateRow]) -> tuple[str, ...]:
    """The features a gate trained on ``rows`` uses: those present in some row and not of one value throughout."""
    used = []
    for name in FEATURES:
        values = {r.features.get(name) for r in rows} - {None}
        if len(values) > 1:
            used.append(name)
    return tuple(used)


def fold_assignment(rows: Sequence[GateRow], folds: int, seed: int) -> list[int]:
    """The cross-validation fold each row is held out in: by question (a question's rows share a fold), with the
    labels spread over the folds as evenly as the questions allow (scikit-learn's StratifiedGroupKFold)."""
    import warnings

    from sklearn.model_selection import StratifiedGroupKFold

    groups = _group_ids(rows)
    labels = [int(r.helps) for r in rows]
    assigned = [-1] * len(rows)
    splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # "the least populated class has fewer members than n_splits": expected
        warnings.simplefilter("ignore", UserWarning)
        for fold, (_, held_out) in enumerate(splitter.split(list(range(len(rows))), labels, groups)):
            for i in held_out:
                assigned[int(i)] = fold
    return assigned


def _group_ids(rows: Sequence[GateRow]) -> list[int]:
    index: dict[tuple[str, str], int] = {}
    return [index.setdefault(r.group, len(index)) for r in rows]


def _matrix(rows: Sequence[GateRow], features: Sequence[str]) -> Any:
    import numpy as np

    return np.array(
        [[np.nan if (v := r.features.get(f)) is None else float(v) for f in features] for r in rows], dtype=float
    )


def _pipeline() -> Any:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        SimpleImputer(strategy="mean", keep_empty_features=True),
        StandardScaler(),
        LogisticRegression(C=C, class_weight="balanced", max_iter=1000),
    )


def _probabilities(train_x: Any, train_y: Sequence[int], test_x: Any) -> list[float]:
    """Out-of-sample probabilities that debate helps; a training part of one class predicts that class."""
    if len(set(train_y)) < 2:
        return [float(train_y[0])] * len(test_x)
    model = _pipeline().fit(train_x, train_y)
    return [float(p) for p in model.predict_proba(test_x)[:, 1]]


def check_rows(rows: Sequence[GateRow], folds: int) -> None:
    """Refuse (ConfigError, with the counts) training data too small or of one class."""
    if folds < 2:
        raise ConfigError(f"folds must be at least 2, got {folds}")
    questions = len({r.group for r in rows})
    positives = sum(r.helps for r in rows)
    counts = f"{len(rows)} results of {questions} questions, debate helped in {positives}"
    if questions < folds:
        raise ConfigError(f"too few questions to train a gate with {folds}-fold cross-validation: {counts}")
    if positives == 0 or positives == len(rows):
        raise ConfigError(f"a gate needs results where debate helped and results where it did not: {counts}")
    tasks = sorted({r.task for r in rows})
    if len(tasks) > 1:
        raise ConfigError(f"a gate is trained on one task; the results hold {', '.join(tasks)}")
    agents = sorted({r.agents for r in rows})
    if len(agents) > 1:
        raise ConfigError(f"the results' round 0s have different numbers of agents ({agents}); a gate needs one")


def train(
    rows: Sequence[GateRow],
    *,
    folds: int = 5,
    threshold: float = 0.5,
    seed: int = 0,
    condition: str = "",
    stores: Sequence[str] = (),
    protocol: str = "",
    rounds: int = 2,
    confidence_scale: int | None = None,
) -> Gate:
    """A gate trained on ``rows`` (one task), with its cross-validated figures; see the module's docstring."""
    check_rows(rows, folds)
    if not 0 <= threshold <= 1:
        raise ConfigError(f"threshold must be between 0 and 1, got {threshold}")
    features = usable_features(rows)
    if not features:
        raise ConfigError(f"no feature varies over the {len(rows)} results: there is nothing to learn from")
    x = _matrix(rows, features)
    y = [int(r.helps) for r in rows]
    assigned = fold_assignment(rows, folds, seed)
    probability = [0.0] * len(rows)
    for fold in range(folds):
        held_out = [i for i, f in enumerate(assigned) if f == fold]
        kept = [i for i, f in enumerate(assigned) if f != fold]
        if not held_out:
            continue
        for i, p in zip(held_out, _probabilities(x[kept], [y[i] for i in kept], x[held_out]), strict=True):
            probability[i] = p
    debated = [p > threshold for p in probability]
    n = len(rows)
    cv = CrossValidation(
        folds=folds,
        seed=seed,
        gate=sum(r.c1 if d else r.c0 for r, d in zip(rows, debated, strict=True)) / n,
        oracle=sum(max(r.c0, r.c1) for r in rows) / n,
        always=sum(r.c1 for r in rows) / n,
        never=sum(r.c0 for r in rows) / n,
        saving=sum(not d for d in debated) / n,
        label_accuracy=sum(d == r.helps for r, d in zip(rows, debated, strict=True)) / n,
    )
    model = _pipeline().fit(x, y)
    scaler, regression = model[1], model[2]
    return Gate(
        task=rows[0].task,
        condition=condition,
        stores=tuple(stores),
        protocol=protocol,
        agents=rows[0].agents,
        rounds=rounds,
        confidence_scale=confidence_scale if "confidence" in features else None,
        features=features,
        coefficients=tuple(float(c) for c in regression.coef_[0]),
        intercept=float(regression.intercept_[0]),
        means=tuple(float(m) for m in scaler.mean_),  # = the imputer's means: a missing value adds nothing
        scales=tuple(float(s) for s in scaler.scale_),
        threshold=threshold,
        results=n,
        questions=len({r.group for r in rows}),
        positives=sum(y),
        cv=cv,
    )


def rows_of(results: Iterable[StoredResult], source: str = "") -> tuple[list[GateRow], Counter[str]]:
    """The training rows of ``results`` and, by reason, how many were left out."""
    rows: list[GateRow] = []
    left_out: Counter[str] = Counter()
    for stored in results:
        row = gate_row(stored, source)
        if isinstance(row, str):
            left_out[row] += 1
        else:
            rows.append(row)
    return rows, left_out
