"""A registered cue of one's own has a slot: the list ``cues`` of a protocol. Its texts reach the agents where
cues apply, after the built-in cues'; a schedule that does not read the slot refuses it; and a protocol that
leaves it empty dumps, hashes and stores exactly as before the slot existed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest

from moot.calls import Caller
from moot.debate import run_debate
from moot.debate.components.cues import Cue
from moot.debate.protocol_presets import COMPONENT_FIELDS, PRESETS, resolve_protocol
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import _REGISTRY, STORED, Unregistered, register
from moot.errors import ConfigError
from moot.runner.config import ConditionConfig
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import scripted_agents

TASK = ArithmeticTask(system_prompt=None)
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


class Marked(Cue):
    """Every text a cue can add, marked with its ``mark``."""

    kind: Literal["test-marked"] = "test-marked"
    mark: str = "M"

    def instruction(self) -> str:
        return f" [{self.mark} instruction]"

    def label(self, turn: Turn) -> str:
        return f" [{self.mark} label]"

    def footnote(self, turn: Turn) -> str:
        return f" [{self.mark} footnote]"

    def prefix(self, previous: RoundRecord) -> str:
        return f"[{self.mark} prefix {previous.vote.winner}] "

    def inline(self, previous: RoundRecord, show: Callable[[str | None], str]) -> str:
        return f"[{self.mark} inline {show(previous.vote.winner)}]"

    def describe(self, protocol: Any = None) -> str:
        return f"marked {self.mark}"


@pytest.fixture(autouse=True)
def marked() -> Iterator[None]:
    register(Marked)
    try:
        yield
    finally:
        _REGISTRY["cue"].pop("test-marked", None)


async def told(protocol: ProtocolSpec, rounds: int = 2) -> list[list[str]]:
    """What each agent's last message said, round by round, in a debate of replies "r<round> a<agent>: 7"."""
    agents = scripted_agents(*[[f"r{r} a{i}: 7" for r in range(rounds)] for i in range(protocol.agents)])
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    return [[t.shown[-1].content for t in debate_round.turns] for debate_round in result.rounds]


async def test_a_users_cue_changes_what_agents_are_told_after_the_built_in_cues() -> None:
    protocol = resolve_protocol("society", agents=2, components={"vote_cue": True, "cues": ["test-marked"]})
    assert [c.kind for c in protocol.cues] == ["vote", "test-marked"]
    round0, round1 = await told(protocol)
    assert all(message.endswith(" [M instruction]") for message in round0)
    for message in round1:
        assert message.startswith("Majority vote from last round: 7.0\n\n[M prefix 7] ")  # the vote's cue first
        assert " [M label]: ```r0 a" in message and "``` [M footnote]" in message
        assert message.endswith(" [M instruction]")
    assert protocol.describe()["cues"] == "last vote, marked M"


async def test_cues_apply_in_the_order_listed_and_in_fresh_history_inline() -> None:
    two = [{"kind": "test-marked", "mark": "A"}, {"kind": "test-marked", "mark": "B"}]
    protocol = resolve_protocol("society-fresh", agents=2, components={"cues": two})
    _, round1 = await told(protocol)
    for message in round1:
        assert message.index("[A inline") < message.index("[B inline") < message.index("This was your most recent")
        assert message.endswith(" [A instruction] [B instruction]")


def test_schedules_that_do_not_read_the_slot_refuse_it_by_name() -> None:
    with pytest.raises(ConfigError, match="style 'liang' does not use 'cues'"):
        resolve_protocol("liang", components={"cues": ["test-marked"]})
    assert resolve_protocol("liang", components={"cues": []}) == PRESETS["liang"]


def test_a_built_in_cue_keeps_its_own_slot_and_an_unknown_one_is_named() -> None:
    with pytest.raises(ConfigError, match="protocol setting cues: cue 'vote' has its own slot: vote_cue = true"):
        resolve_protocol("society", components={"cues": ["vote"]})
    with pytest.raises(ConfigError, match="protocol setting cues.0: unknown cue rule 'nope'"):
        resolve_protocol("society", components={"cues": ["nope"]})
    with pytest.raises(ConfigError, match="cues.0.loud"):
        resolve_protocol("society", components={"cues": [{"kind": "test-marked", "loud": 1}]})


def test_an_empty_slot_leaves_every_dump_as_it_was_and_a_given_one_reads_back() -> None:
    """No dump of a preset without a further cue (and so no stored condition, fingerprint or experiment hash)
    gains a key; a preset that sets one (free-mad's anti-conformity) dumps it under ``cues``."""
    assert "cues" in COMPONENT_FIELDS and "extra_cues" not in COMPONENT_FIELDS
    for preset in PRESETS.values():
        keys = set(preset.model_dump(mode="json"))
        assert "extra_cues" not in keys and ("cues" in keys) == bool(preset.extra_cues), preset.name
    assert [c.kind for c in PRESETS["free-mad"].extra_cues] == ["anti-conformity"]
    assert sum(1 for preset in PRESETS.values() if not preset.extra_cues) == len(PRESETS) - 1
    protocol = resolve_protocol("society", components={"cues": [{"kind": "test-marked", "mark": "X"}]})
    dumped = protocol.model_dump(mode="json")
    assert dumped["cues"] == [{"kind": "test-marked", "mark": "X"}] and "extra_cues" not in dumped
    assert ProtocolSpec.model_validate(json.loads(json.dumps(dumped))) == protocol
    _REGISTRY["cue"].pop("test-marked")  # read back where its plug-in is not loaded: a record of it
    (stored,) = ProtocolSpec.model_validate(dumped, context=STORED).extra_cues
    assert isinstance(stored, Unregistered) and stored.model_dump() == {"kind": "test-marked", "mark": "X"}


def test_an_experiment_condition_sets_it() -> None:
    condition = ConditionConfig.model_validate({"name": "c", "protocol": "society", "cues": ["test-marked"]})
    assert condition.components == {"cues": ["test-marked"]}
    spec = resolve_protocol(condition.protocol, components=condition.components)
    assert [c.kind for c in spec.cues] == ["test-marked"] and spec.components()[5].kind == "test-marked"
