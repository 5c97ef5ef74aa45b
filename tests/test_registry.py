"""Components as plug-ins: the registry, names and stored forms, user rules, one schema for files."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from moot.calls import Caller
from moot.debate import run_debate
from moot.debate.agents import AgentSpec
from moot.debate.components.retention.perplexity_top import PerplexityTop
from moot.debate.components.stopping.judge import JudgeConfidence
from moot.debate.protocol_presets import COMPONENT_FIELDS, PRESETS, resolve_protocol
from moot.debate.protocols import ProtocolSpec
from moot.debate.registry import FAMILIES, STORED, load_plugin, parse, rules, template_hashes
from moot.errors import ConfigError
from moot.runner.config import AgentTemplate
from moot.runner.config_files import parse_experiment
from moot.runner.config_resolve import resolve
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import scripted_agents

EXAMPLES = Path(__file__).parent.parent / "examples"
TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


def test_every_family_has_its_rules_registered_by_name() -> None:
    names = {family: set(rules(family)) for family in FAMILIES}
    assert names["retention"] >= {"all", "dar", "certain", "similar", "dar-text", "perplexity-top", "distinct"}
    assert names["stopping"] >= {"fixed", "consensus", "stable", "judge", "moderator", "moderator_confidence"}
    assert names["aggregation"] >= {"majority", "confidence", "judge", "moderator", "trajectory", "synthesis"}
    assert names["topology"] >= {"none", "full", "ring", "star", "graph"}
    assert names["schedule"] >= {"peers", "liang"}
    assert names["cue"] >= {"confidence", "uncertainty", "vote", "anti-conformity"}
    assert (names["history"], names["rendering"], names["initializer"]) == (
        {"chat", "fresh", "synthesize"},
        {"du", "dar", "grouped"},
        {"independent", "diverse"},
    )


def test_a_name_means_the_rule_with_its_defaults() -> None:
    assert parse("retention", "perplexity-top") == PerplexityTop(fraction=0.5)
    assert parse("stopping", {"kind": "judge", "threshold": 80}) == JudgeConfidence(threshold=80)
    with pytest.raises(ValueError, match="unknown retention rule 'keep-some'; known: all, "):
        parse("retention", "keep-some")
    with pytest.raises(ValueError, match="fraction"):
        parse("retention", {"kind": "perplexity-top", "fraction": 2})


def test_moot_0_1_flat_protocols_still_load() -> None:
    """A protocol as moot 0.1 stored it (flat settings, every parameter of every kind) loads as today's."""
    old = {
        "name": "mad-m2",
        "agents": 4,
        "rounds": 3,
        "style": "peers",
        "topology": {"kind": "full", "k": 1, "hub": 0, "edges": None},
        "history": "fresh",
        "rendering": "du",
        "initializer": "independent",
        "pool_size": None,
        "similarity": "jaccard",
        "confidence": False,
        "confidence_scale": 10,
        "uncertainty_cue": False,
        "vote_cue": False,
        "retention": "perplexity-top",
        "retain_fraction": 0.25,
        "stopping": {"kind": "fixed", "fraction": 1.0, "threshold": 90.0, "min_rounds": 1},
        "aggregation": "majority",
        "tie_rule": "first",
        "reference": "",
    }
    spec = ProtocolSpec.model_validate(old)
    assert spec.retention == PerplexityTop(fraction=0.25) and spec.history.kind == "fresh"
    assert ProtocolSpec.model_validate(spec.model_dump()) == spec  # today's form round-trips
    strict = ProtocolSpec.model_validate(
        old
        | {
            "name": "c",
            "agents": 3,
            "retention": "all",
            "retain_fraction": 0.5,
            "confidence": True,
            "confidence_scale": 7,
            "aggregation": "confidence",
        }
    )
    assert strict.stated_confidence_scale == 7 and strict.needs_logprobs is False
    with pytest.raises(ValueError, match="retain_fraction applies to a retention rule with a 'fraction'"):
        ProtocolSpec.model_validate(old | {"retention": "all"})


def test_describe_names_every_component() -> None:
    for spec in PRESETS.values():
        assert set(spec.describe()) >= {"style", "topology", "retention", "cues", "stopping", "aggregation"}
    assert PRESETS["mad-m2"].describe()["retention"] == "perplexity-top (50%)"
    assert PRESETS["dar"].describe()["cues"] == "uncertainty (ANLL), last vote"
    assert PRESETS["du-adaptive"].describe()["stopping"] == "judge confidence >= 90/100, cap 6 rounds"
    assert PRESETS["diverse"].describe()["initializer"] == "diverse (pool of 6, jaccard similarity)"
    assert PRESETS["sparse"].describe()["topology"] == "ring (k=1), density 0.67"
    assert PRESETS["liang"].describe()["model calls per round"].startswith("2 debater calls")


def test_needs_come_from_the_components() -> None:
    assert PRESETS["mad-m2"].needs_logprobs and PRESETS["uncertain-prompt"].needs_logprobs
    assert not PRESETS["society"].needs_logprobs and not PRESETS["society"].needs_judge
    assert PRESETS["dar"].needs_judge and PRESETS["du-adaptive"].needs_judge and PRESETS["liang"].needs_judge


def test_a_partial_table_changes_the_presets_rule_and_a_kind_replaces_it() -> None:
    assert resolve_protocol("du-adaptive", components={"stopping": {"threshold": 80}}).stopping == JudgeConfidence(
        threshold=80
    )
    assert resolve_protocol("du-adaptive", components={"stopping": {"kind": "stable"}}).stopping.kind == "stable"


def _write_rule(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


KEEP_FIRST = """
    from typing import Literal

    from moot.debate.components.retention import Kept, Retention
    from moot.debate.registry import register


    @register
    class KeepFirst(Retention):
        kind: Literal["keep-first"] = "keep-first"

        async def keep(self, debate, previous):
            return Kept([0])
"""


async def test_a_new_retention_rule_is_one_file(tmp_path: Path) -> None:
    """A rule in its own file, registered by name, runs through the one round loop with no other edit."""
    load_plugin(_write_rule(tmp_path, "keep_first.py", KEEP_FIRST))
    protocol = resolve_protocol("society", components={"retention": "keep-first"})
    agents = scripted_agents(["1", "1"], ["2", "2"], ["3", "3"])
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    retention = result.rounds[1].retention
    assert retention is not None and (retention.rule, retention.kept, retention.forwarded) == (
        "keep-first",
        ("agent-1",),
        2,
    )  # agent-1 hears nobody else; agents 2 and 3 hear agent-1 only
    assert "keep-first" in rules("retention") and "retention:keep-first" in template_hashes()


async def test_a_users_stopping_rule_from_an_experiment_file_and_from_the_library() -> None:
    config = parse_experiment(
        {
            "plugins": ["plugins/plateau.py"],
            "tasks": [{"name": "arithmetic", "count": 1}],
            "agent": {"backend": {"kind": "scripted"}},
            "conditions": [{"name": "p", "protocol": "society", "rounds": 5, "stopping": {"kind": "plateau"}}],
        },
        base=EXAMPLES,
    )
    (condition,) = resolve(config)
    assert condition.protocol.describe()["stopping"] == "the majority answer is unchanged for 2 rounds, cap 5 rounds"
    # from the library: the plug-in is loaded; its rule is named like a built-in one
    protocol = resolve_protocol("society", rounds=5, components={"stopping": {"kind": "plateau", "patience": 3}})
    agents = scripted_agents(["7", "9", "9", "9", "9"], ["8", "9", "9", "9", "9"], ["9", "4", "9", "9", "9"])
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert [r.vote.winner for r in result.rounds] == ["7", "9", "9", "9"] and result.stop_reason == "plateau"
    with pytest.raises(ConfigError, match="plugins: plugin .*nothere.py: no such file"):
        parse_experiment({"plugins": ["nothere.py"], "tasks": [], "conditions": []}, base=EXAMPLES)


def test_a_stored_rule_whose_plugin_is_not_loaded_is_kept_as_data() -> None:
    stored = PRESETS["society"].model_dump() | {"retention": {"kind": "from-elsewhere", "share": 0.3}}
    spec = ProtocolSpec.model_validate(stored, context=STORED)
    assert spec.retention.kind == "from-elsewhere" and spec.model_dump()["retention"]["share"] == 0.3
    with pytest.raises(ValueError, match="unknown retention rule 'from-elsewhere'"):
        ProtocolSpec.model_validate(stored)


# -- one schema: every component field per condition, every agent field per agent -----------------

FIELD_VALUES: dict[str, tuple[str, Any, Any]] = {
    # field: (base preset, value in the file, what the resolved protocol holds)
    "style": ("liang", "liang", "liang"),
    "topology": ("society", {"kind": "ring", "k": 1}, "ring"),
    "history": ("society", "fresh", "fresh"),
    "rendering": ("society", "grouped", "grouped"),
    "initializer": ("society", "diverse", "diverse"),
    "pool_size": ("diverse", 8, 8),
    "similarity": ("diverse", "jaccard", "jaccard"),
    "confidence": ("society", True, 10),
    "confidence_scale": ("confidence", 7, 7),
    "uncertainty_cue": ("society", True, "uncertainty"),
    "vote_cue": ("society", True, "vote"),
    "cues": ("society", [], ()),  # a cue of one's own (a plug-in's): tests/test_cue_slot.py
    "retention": ("society", "distinct", "distinct"),
    "retain_fraction": ("mad-m2", 0.25, 0.25),
    "stopping": ("society", {"kind": "consensus", "fraction": 0.6}, "consensus"),
    "aggregation": ("confidence-weighted", "majority", "majority"),
    "tie_rule": ("society", "random", "random"),
    "instruction": ("society", "none", "none"),
    "peer_view": ("society", "reasoning:64", "reasoning:64"),
}


def _held(spec: ProtocolSpec, field: str) -> Any:
    return {
        "pool_size": lambda: spec.initializer.pool(spec.agents),
        "similarity": lambda: spec.initializer.similarity,
        "confidence": lambda: spec.stated_confidence_scale,
        "confidence_scale": lambda: spec.stated_confidence_scale,
        "retain_fraction": lambda: spec.retention.fraction,
        "tie_rule": lambda: spec.tie_rule,
        "instruction": lambda: spec.instruction,
        "peer_view": lambda: spec.peer_view,
        "cues": lambda: spec.extra_cues,
    }.get(field, lambda: getattr(spec, field).kind)()


def test_the_field_table_covers_every_component_field() -> None:
    assert set(FIELD_VALUES) == set(COMPONENT_FIELDS)


@pytest.mark.parametrize("field", sorted(FIELD_VALUES))
def test_every_component_field_can_be_set_per_condition(field: str) -> None:
    preset, value, held = FIELD_VALUES[field]
    rounds = {"rounds": 3} if preset != "liang" else {}
    config = parse_experiment(
        {
            "tasks": [{"name": "arithmetic", "count": 1}],
            "agent": {"backend": {"kind": "scripted"}},
            "conditions": [{"name": "c", "protocol": preset, field: value, **rounds}],
            "presets": {"mine": {"base": preset, field: value}},
        }
    )
    (condition,) = resolve(config)
    assert _held(condition.protocol, field) == held
    (mine,) = resolve(parse_experiment({**config.model_dump(), "conditions": [{"name": "m", "protocol": "mine"}]}))
    assert _held(mine.protocol, field) == held


AGENT_VALUES: dict[str, Any] = {
    "name": "alice",
    "backend": {"kind": "scripted", "model": "numbers"},
    "sampling": {"temperature": 0.2, "top_p": 0.9, "max_tokens": 64},
    "persona": "You are careful.",
    "agreement": 3,
}


def test_the_agent_table_has_every_agent_field() -> None:
    assert set(AgentTemplate.model_fields) == set(AgentSpec.model_fields) == set(AGENT_VALUES)


@pytest.mark.parametrize("field", sorted(AGENT_VALUES))
def test_every_agent_field_can_be_set_per_agent(field: str) -> None:
    config = parse_experiment(
        {
            "tasks": [{"name": "arithmetic", "count": 1}],
            "agent": {"backend": {"kind": "scripted"}},
            "conditions": [{"name": "c", "protocol": "society", "agents": [{field: AGENT_VALUES[field]}, {}, {}]}],
        }
    )
    (condition,) = resolve(config)
    first, second = condition.agents[0], condition.agents[1]
    expected = AgentSpec.model_validate(
        {"name": "agent-1", "backend": {"kind": "scripted"}, field: AGENT_VALUES[field]}
    )
    assert getattr(first, field) == getattr(expected, field)
    assert second.name == "agent-2" and (field == "name" or getattr(second, field) != getattr(first, field))


def test_moot_protocols_components_lists_every_rule() -> None:
    from typer.testing import CliRunner

    from moot.cli import app

    result = CliRunner().invoke(app, ["protocols", "components"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    for family in FAMILIES:
        for name in rules(family):
            assert f" {name} " in result.output
    assert "fraction=0.5" in result.output and "threshold=90.0" in result.output


def test_component_settings_from_the_command_line() -> None:
    from moot.runner.config_resolve import resolve_condition
    from moot.runner.options import AgentOptions

    options = AgentOptions.of(
        settings=["retention=dar", 'stopping={kind="consensus", fraction=0.6}', "vote_cue=true"], backend="openai"
    )
    condition = resolve_condition(options.condition("society"), AgentTemplate(), "options")
    protocol = condition.protocol
    assert (protocol.retention.kind, protocol.stopping.kind, protocol.vote_cue is not None) == (
        "dar",
        "consensus",
        True,
    )
    assert "--set" in options.given() and "--backend" in options.given()
    with pytest.raises(ConfigError, match="option settings: 'memory=3' is not KEY=VALUE with KEY one of style"):
        AgentOptions.of(settings=["memory=3"])


def test_a_run_with_a_plugin_rule_is_stored_resumed_and_reported_without_the_plugin(tmp_path: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from moot.runner.experiment import run_experiment
    from moot.runner.store import RunStore

    data = {
        "name": "plateau",
        "plugins": ["plugins/plateau.py"],
        "tasks": [{"name": "arithmetic", "count": 3}],
        "agent": {"backend": {"kind": "scripted"}},
        "conditions": [{"name": "p", "protocol": "society", "rounds": 4, "stopping": {"kind": "plateau"}}],
    }
    path = tmp_path / "run.sqlite"
    first = asyncio.run(run_experiment(parse_experiment(data, base=EXAMPLES), path))
    again = asyncio.run(run_experiment(parse_experiment(data, base=EXAMPLES), path))
    assert first.calls > 0 and (again.calls, again.skipped) == (0, 3)
    store = RunStore.open(path)
    try:
        assert store.conditions()["p"].protocol.stopping.kind == "plateau"
        assert "stopping:plateau" in store.run_meta().prompt_templates
    finally:
        store.close()
    # another process, where the plug-in is not loaded: the rule is read back as data and the run reports
    report = subprocess.run(
        [sys.executable, "-m", "moot", "report", str(path), "--markdown", str(tmp_path / "r.md")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    assert "| p |" in (tmp_path / "r.md").read_text()


HASHES = (
    "import json\n{imports}\nfrom moot.debate.registry import template_hashes\n"
    "print(json.dumps([template_hashes(), template_hashes()]))"
)


@pytest.mark.parametrize(
    "imports", ["", "import moot.debate.components.stopping.judge", "import moot.runner.experiment"]
)
def test_template_hashes_do_not_depend_on_what_was_imported_before(imports: str) -> None:
    """A fresh process's first call hashes every template, rule and task, as its second does and as a process
    that imported other modules first does (once a first call saw only the templates imported so far)."""
    import json
    import subprocess
    import sys

    code = HASHES.format(imports=imports)
    first, second = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              check=True).stdout)  # fmt: skip
    assert first == second
    assert {
        "stopping:consensus",
        "debate.schedules.liang.moderator_prompt",
        "task:moot.tasks.arithmetic.ArithmeticTask",
        "task:moot.tasks.base.TaskBase",
        "task:moot.tasks.datafile.NumberFileTask",
    } <= set(first)
