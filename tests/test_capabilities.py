"""Components compose through declared capabilities, not each other's names; stop reasons and whether
accuracy applies are typed, declared values (issue 38, items 4 and 5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from moot.analysis.report import task_metric
from moot.analysis.summaries import peer_style
from moot.backends.base import Message
from moot.calls import Caller
from moot.debate import run_debate
from moot.debate.components.initializers import Diverse, Independent, Initializer
from moot.debate.components.stopping import Stopping
from moot.debate.context import Debate
from moot.debate.protocol_presets import PRESETS, resolve_protocol
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, PoolRecord, RoundRecord, StopReason, Turn, Vote
from moot.debate.registry import _REGISTRY, STORED, register
from moot.debate.schedules import SLOTS, Schedule
from moot.errors import ConfigError
from moot.runner.config_files import load_experiment
from moot.runner.config_resolve import experiment_hash
from moot.runner.store import RunStore
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question, TaskBase
from moot.tasks.biographies import BiographiesTask
from tests.helpers import scripted_agents

EXAMPLES = Path(__file__).parent.parent / "examples"
TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


# -- the dumps of existing protocols are unchanged ------------------------------------------------------------


def test_existing_experiments_keep_their_hashes() -> None:
    """Capabilities are class variables, not fields: every stored form, and so every hash, is as before."""
    assert experiment_hash(load_experiment(EXAMPLES / "replicate" / "du.toml")) == (
        "2aadf00f73d9349d1144b39d9782e09b43932ff051741aa42560c78283bff4e6"
    )
    assert experiment_hash(load_experiment(EXAMPLES / "scripted-smoke.toml")) == (
        "bfe84e3a807b6bf1ddd9447aa72c20ab8f8ba9936b4c6e49cf63fe0d570cdaea"
    )


def test_the_stored_du_run_still_matches_its_experiment() -> None:
    path = Path(__file__).parent.parent / "runs" / "replicate" / "du.sqlite"
    if not path.exists():
        pytest.skip("no stored Du replication run here")
    store = RunStore.read(path)
    try:
        assert store.run_meta().fingerprint_hash == experiment_hash(load_experiment(EXAMPLES / "replicate" / "du.toml"))
    finally:
        store.close()


# -- a schedule declares the slots it reads -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slot", "value"),
    [
        ("topology", "ring"),
        ("history", "fresh"),
        ("rendering", "grouped"),
        ("initializer", "diverse"),
        ("retention", "distinct"),
        ("confidence", True),
        ("uncertainty_cue", True),
        ("vote_cue", True),
    ],
)
def test_liang_refuses_a_slot_it_does_not_use(slot: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"style 'liang' does not use '{slot}'"):
        resolve_protocol("liang", components={slot: value})


def test_a_slot_left_at_its_default_is_accepted_and_peers_use_every_slot() -> None:
    protocol = resolve_protocol("liang", components={"topology": "full", "history": "chat", "retention": "all"})
    assert protocol == PRESETS["liang"]
    assert PRESETS["society"].style.slots == SLOTS and PRESETS["liang"].style.slots == frozenset()


def test_a_stored_liang_run_with_an_unused_slot_still_reads() -> None:
    """Runs stored before the refusal existed read as they were run (Liang ignored these slots then)."""
    stored = PRESETS["liang"].model_dump(mode="json") | {"topology": {"kind": "ring", "k": 1}}
    assert ProtocolSpec.model_validate(stored, context=STORED).topology.kind == "ring"
    with pytest.raises(ValueError, match="style 'liang' does not use 'topology'"):
        ProtocolSpec.model_validate(stored)


def test_a_stored_run_with_a_schedule_from_a_plugin_not_loaded_still_reads() -> None:
    """Its schedule's capabilities are unknown here, so the other rules do not ask them."""
    stored = PRESETS["du-adaptive"].model_dump(mode="json") | {"style": {"kind": "elsewhere", "turns": 2}}
    protocol = ProtocolSpec.model_validate(stored, context=STORED)
    assert (protocol.style.kind, protocol.stopping.kind) == ("elsewhere", "judge")


def test_checks_ask_capabilities_and_keep_their_messages() -> None:
    assert PRESETS["society"].style.has_peers and not PRESETS["liang"].style.has_peers
    assert PRESETS["liang"].style.moderated and not PRESETS["society"].style.moderated
    assert Diverse.samples_pool and not Independent.samples_pool
    with pytest.raises(ConfigError, match="a moderator exists only in style 'liang'"):
        resolve_protocol("society", components={"aggregation": "moderator"})
    with pytest.raises(ConfigError, match="a moderator exists only in style 'liang'"):
        resolve_protocol("society", components={"stopping": "moderator_answer"})
    with pytest.raises(ConfigError, match="aggregation 'judge' needs stopping kind 'judge'"):
        resolve_protocol("society", components={"aggregation": "judge"})
    with pytest.raises(ConfigError, match="style 'liang' stops by 'fixed', 'moderator_answer', 'moderator'"):
        resolve_protocol("liang", components={"stopping": "judge"})
    with pytest.raises(ConfigError, match="style 'liang' needs exactly 2 agents .* aggregation that takes"):
        resolve_protocol("liang", components={"aggregation": "majority"})
    with pytest.raises(ConfigError, match="initializer 'diverse' needs pool_size >= agents"):
        resolve_protocol("diverse", components={"initializer": {"kind": "diverse", "pool_size": 2}})


# -- a user's own schedule and initialiser with the built-in components ----------------------------------------


class Rounds(Schedule):
    """Each agent answers in round 0 by the protocol's initialiser, then repeats alone: peers that vote
    each round but hear nobody (so no topology, history, rendering, retention or cue slot)."""

    kind: Literal["test-rounds"] = "test-rounds"
    has_peers = True
    slots = frozenset({"initializer"})

    def start(self, debate: Debate) -> None:
        debate.histories = [[Message("user", debate.task.render(debate.question))] for _ in debate.agents]

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        protocol, pool = debate.protocol, None
        if round_index == 0:
            turns, pool = await protocol.initializer.first_round(debate)
        else:
            turns = [await debate.speak(a, debate.histories[i], round_index) for i, a in enumerate(debate.agents)]
        vote = protocol.aggregation.vote(turns, protocol.tie_rule, 0)
        verdict = await protocol.stopping.verdict(debate, turns, round_index)
        return RoundRecord(index=round_index, turns=tuple(turns), vote=vote, judge=verdict, pool=pool)


class Moderated(Schedule):
    """A schedule whose moderator rules each round but is not asked for a confidence (checks only)."""

    kind: Literal["test-moderated"] = "test-moderated"
    moderated = True
    slots = frozenset()


class LastFirst(Initializer):
    """Round 0 answered by the agents in reverse order (any schedule that reads the slot can use it)."""

    kind: Literal["test-last-first"] = "test-last-first"

    async def first_round(self, debate: Debate) -> tuple[list[Turn], PoolRecord | None]:
        turns = [await debate.speak(a, debate.histories[i], 0) for i, a in reversed(list(enumerate(debate.agents)))]
        return turns[::-1], None


@pytest.fixture
def own_rules() -> Iterator[None]:
    """The test's own rules, registered as a plug-in registers them, and forgotten afterwards."""
    for cls in (Rounds, Moderated, LastFirst):
        register(cls)
    try:
        yield
    finally:
        for cls in (Rounds, Moderated, LastFirst):
            _REGISTRY[cls.family].pop(cls.__pydantic_fields__["kind"].default, None)


def _mine(**components: Any) -> ProtocolSpec:
    return resolve_protocol("society", agents=3, rounds=3, components={"style": "test-rounds", **components})


@pytest.mark.usefixtures("own_rules")
async def test_a_users_schedule_works_with_the_built_in_components_that_suit_it() -> None:
    protocol = _mine(stopping="consensus", initializer={"kind": "diverse", "pool_size": 4}, topology="full")
    agents = scripted_agents(["1", "2", "2"], ["2", "2"], ["3", "2"])  # agent 1 also answers the 4th candidate
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert result.rounds[0].pool is not None and len(result.rounds[0].pool.texts) == 4
    assert result.stop_reason == StopReason.CONSENSUS and type(result.stop_reason) is StopReason
    assert result.rounds_used == 2 and result.final_answer == "2"
    # a slot it does not read is refused by name; a moderator's rule needs a moderated schedule
    with pytest.raises(ConfigError, match="style 'test-rounds' does not use 'topology'"):
        _mine(topology="ring")
    with pytest.raises(ConfigError, match="style 'test-rounds' does not use 'vote_cue'"):
        _mine(vote_cue=True)
    with pytest.raises(ConfigError, match="a moderator exists only in style 'liang' or 'test-moderated'"):
        _mine(stopping="moderator_answer")
    with pytest.raises(ConfigError, match="a moderator exists only in style 'liang' or 'test-moderated'"):
        _mine(aggregation="moderator")
    assert peer_style(_condition(protocol))


@pytest.mark.usefixtures("own_rules")
def test_a_users_moderated_schedule_takes_the_moderators_rules() -> None:
    protocol = resolve_protocol(
        "liang", components={"style": "test-moderated", "stopping": "moderator_answer", "aggregation": "moderator"}
    )
    assert protocol.style.kind == "test-moderated" and not peer_style(_condition(protocol))
    with pytest.raises(ConfigError, match="style 'test-moderated' stops by 'fixed', 'moderator_answer'"):
        resolve_protocol("liang", components={"style": "test-moderated", "stopping": "stable"})
    with pytest.raises(ConfigError, match="needs a moderator prompt that asks for confidence"):
        resolve_protocol("liang", components={"style": "test-moderated", "stopping": "moderator_confidence"})


@pytest.mark.usefixtures("own_rules")
async def test_a_users_initializer_works_with_the_peer_schedule_and_not_with_liang() -> None:
    protocol = resolve_protocol("society", agents=2, rounds=1, components={"initializer": "test-last-first"})
    agents = scripted_agents(["4"], ["4"])
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert [t.agent for t in result.rounds[0].turns] == ["agent-1", "agent-2"] and result.final_answer == "4"
    with pytest.raises(ConfigError, match="style 'liang' does not use 'initializer'"):
        resolve_protocol("liang", components={"initializer": "test-last-first"})


def _condition(protocol: ProtocolSpec) -> Any:
    """What ``peer_style`` reads of a resolved condition: its protocol."""

    class Condition:
        pass

    condition = Condition()
    condition.protocol = protocol  # type: ignore[attr-defined]
    return condition


A_ROUND = RoundRecord(0, (), Vote((), None, (), 0))  # a round (what ``stop`` needs before it asks ``reason``)


# -- stop reasons ---------------------------------------------------------------------------------------------


def test_a_stop_reason_is_an_open_typed_name() -> None:
    assert StopReason.MAX_ROUNDS == "max_rounds" and hash(StopReason.JUDGE_CONFIDENT) == hash("judge_confident")
    assert isinstance(StopReason("plateau"), str) and repr(StopReason("plateau")) == "StopReason('plateau')"

    class Never(Stopping):
        kind: Literal["test-never"] = "test-never"

        def reason(self, history: Any) -> str | None:
            return "plateau"  # a plug-in may return a plain name

    reason = Never().stop([A_ROUND])
    assert reason == "plateau" and type(reason) is StopReason


async def test_the_round_loop_gives_typed_stop_reasons() -> None:
    protocol = resolve_protocol("society", agents=2)
    result = await run_debate(QUESTION, TASK, protocol, scripted_agents(["1", "1"], ["2", "2"]), caller=Caller())
    assert result.stop_reason == StopReason.MAX_ROUNDS
    assert type(result.stop_reason) is StopReason


@pytest.mark.parametrize("written", ["max_rounds", StopReason.MODERATOR_CONFIDENT, "plateau"])
def test_a_stored_stop_reason_reads_back_as_written(tmp_path: Path, written: str) -> None:
    """A store holds the plain name (as every earlier store does) and reads it back as a StopReason."""
    result = DebateResult(QUESTION, "p", (), None, FinalStatus.UNPARSED, False, StopReason(written))
    store = RunStore.create(tmp_path / "run.sqlite", {}, {})
    try:
        store.add_questions("arithmetic", [QUESTION])
        store.add_result("c", "arithmetic", 0, result, {}, None, None)
        (stored,) = store.results()
        assert stored.result.stop_reason == written and type(stored.result.stop_reason) is StopReason
        (row,) = store.rows("results")
        assert type(row["stop_reason"]) is str and row["stop_reason"] == written
    finally:
        store.close()


def test_a_plain_string_given_to_a_result_becomes_a_stop_reason() -> None:
    result = DebateResult(QUESTION, "p", (), None, FinalStatus.UNPARSED, False, "consensus")  # type: ignore[arg-type]
    assert type(result.stop_reason) is StopReason and result.stop_reason == StopReason.CONSENSUS


# -- whether accuracy applies is the task's declaration ---------------------------------------------------------


def test_accuracy_applies_is_declared_by_the_task() -> None:
    assert TaskBase.accuracy_applies and ArithmeticTask.accuracy_applies and not BiographiesTask.accuracy_applies
    assert task_metric("biographies") == (BiographiesTask.metric_description, False)
    assert task_metric("arithmetic")[1] is True
    assert task_metric("no-such-task") == (None, True)


def test_a_declaration_wins_over_the_metrics_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """The description is shown; it no longer decides (it did by looking for the word "accuracy")."""
    monkeypatch.setattr(ArithmeticTask, "metric_description", "exact match")
    assert task_metric("arithmetic") == ("exact match", True)
    monkeypatch.setattr(BiographiesTask, "metric_description", "accuracy of facts")
    assert task_metric("biographies") == ("accuracy of facts", False)


def test_an_undeclared_task_falls_back_to_its_metrics_words(monkeypatch: pytest.MonkeyPatch) -> None:
    class Plain:
        """A task of the Task protocol that does not derive from TaskBase: no declaration."""

        metric_description = "fact precision"

    monkeypatch.setattr("moot.tasks.get_task", lambda name, data=None: Plain())
    assert task_metric("plain") == ("fact precision", False)
    Plain.metric_description = "accuracy (exact)"
    assert task_metric("plain") == ("accuracy (exact)", True)
