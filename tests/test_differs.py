"""What two arms differ in besides the protocol (moot.analysis.differs): read from a real scripted store's
round-0 requests and resolved conditions, one difference per pair; and on the committed across store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.analysis.budget import equal_budget
from moot.analysis.cli import app
from moot.analysis.differs import ArmProfile, Differences, arm_profiles, differences
from moot.analysis.render import report_markdown
from moot.analysis.report import build_report, compare_conditions
from moot.analysis.tables import comparison_tables, equal_budget_rows_table, pairs_table
from moot.backends.scripted import seeded_numbers
from tests.helpers import WriteRun, arithmetic_experiment

SAMPLING = {"temperature": 0.7, "top_p": 1.0, "max_tokens": 512}
SOCIETY: dict[str, Any] = {"protocol": "society", "agents": 3, "rounds": 2}


def _agents(**agent: Any) -> list[dict[str, Any]]:
    """Three agents with ``agent``'s settings over the experiment's (sampling: only the given keys change)."""
    if "sampling" in agent:
        agent = {**agent, "sampling": {**SAMPLING, **agent["sampling"]}}
    return [agent] * 3


CONDITIONS: list[dict[str, Any]] = [
    {"name": "base", **SOCIETY},
    {"name": "same", **SOCIETY},
    {"name": "model", **SOCIETY, "agents": _agents(backend={"kind": "scripted", "model": "numbers-b"})},
    {"name": "temperature", **SOCIETY, "agents": _agents(sampling={"temperature": 1.0})},
    {"name": "top-p", **SOCIETY, "agents": _agents(sampling={"top_p": 0.9})},
    {"name": "max-tokens", **SOCIETY, "agents": _agents(sampling={"max_tokens": 256})},
    {"name": "instruction", **SOCIETY, "instruction": "none"},
    {"name": "persona", **SOCIETY, "agents": _agents(persona="You are a patient mathematician.")},
    {"name": "agents", **SOCIETY, "agents": 4},
    {"name": "rounds", **SOCIETY, "rounds": 3},
    {"name": "retention", **SOCIETY, "retention": "distinct"},
    {"name": "vote-cue", **SOCIETY, "vote_cue": True},
    {"name": "confidence", **SOCIETY, "confidence": True},
    {"name": "fresh-task", **SOCIETY, "history": {"kind": "fresh", "templates": "task"}},
    {"name": "fresh-choi", **SOCIETY, "history": {"kind": "fresh", "templates": "choi"}},
    {"name": "vote-6", "protocol": "vote", "agents": 6},
]
QUESTIONS = 3

# condition -> (its protocol differences from base's, what else differs, as text)
AGAINST_BASE: dict[str, tuple[tuple[str, ...], str]] = {
    "same": ((), "—"),
    "model": ((), "model (numbers-b vs numbers)"),
    "temperature": ((), "temperature (1.0 vs 0.7)"),
    "top-p": ((), "top_p (0.9 vs 1.0)"),
    "max-tokens": ((), "max_tokens (256 vs 512)"),
    "instruction": ((), "system message (none vs task's)"),
    "persona": ((), "system message (persona vs task's)"),
    "agents": ((), "agents (4 vs 3)"),
    "rounds": (("rounds",), "—"),
    "retention": (("retention",), "—"),
    "vote-cue": (("vote cue",), "—"),
    "confidence": (("confidence cue",), "template (confidence form vs Du)"),
}


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    """A real store: every condition above on the scripted backend ("numbers", and "numbers-b" for one arm)."""
    agent = {"backend": {"kind": "scripted", "model": "numbers"}, "sampling": SAMPLING}
    experiment = arithmetic_experiment("differs", CONDITIONS, QUESTIONS, agent=agent)
    return write_run("differs", experiment, {"numbers-b": seeded_numbers}, file="differs.sqlite")


@pytest.fixture(scope="module")
def profiles(run: Path) -> dict[tuple[str, str], ArmProfile]:
    return arm_profiles(run)


@pytest.mark.parametrize("name", list(AGAINST_BASE))
def test_each_pair_differs_in_its_one_thing(profiles: dict[tuple[str, str], ArmProfile], name: str) -> None:
    protocol, text = AGAINST_BASE[name]
    d = differences(profiles[(name, "arithmetic")], profiles[("base", "arithmetic")])
    assert tuple(x.aspect for x in d.protocol) == protocol
    assert d.text == text
    assert len(d.aspects) == (0 if name == "same" else 1) + (name == "confidence")


def test_choi_and_the_tasks_templates_differ_in_the_template_alone(profiles: dict[tuple[str, str], ArmProfile]) -> None:
    """A fresh history's templates are the template, not the history."""
    d = differences(profiles[("fresh-choi", "arithmetic")], profiles[("fresh-task", "arithmetic")])
    assert (d.protocol, d.text) == ((), "template (Choi vs Du)")


def test_a_profile_reads_the_requests_and_round_trips_through_json(profiles: dict[tuple[str, str], ArmProfile]) -> None:
    base = profiles[("base", "arithmetic")]
    assert (base.model, base.temperature, base.top_p, base.max_tokens, base.stop) == (
        "numbers",
        "0.7",
        "1.0",
        "512",
        "none",
    )
    assert (base.seeds, base.system.name, base.template.name, base.questions, base.agents) == (
        "derived",
        "task's",
        "Du",
        QUESTIONS,
        3,
    )
    assert base.system.digest and base.template.digest and base.helper_model == ""
    assert ArmProfile.model_validate_json(base.model_dump_json()) == base
    d = differences(profiles[("confidence", "arithmetic")], base)
    assert Differences.model_validate_json(d.model_dump_json()) == d
    # one template across questions: the question's own text is taken out of every request
    assert profiles[("same", "arithmetic")].template == base.template


def test_a_pool_is_not_a_difference_in_agents_and_arms_of_other_tasks_are_refused(
    profiles: dict[tuple[str, str], ArmProfile],
) -> None:
    vote, base = profiles[("vote-6", "arithmetic")], profiles[("base", "arithmetic")]
    assert differences(base, vote).text == "agents (3 vs 6)"
    assert differences(base, vote, ignore=("agents",)).text == "—"
    single = differences(base.model_copy(update={"agents": 1}), vote)
    assert "agents" in [x.aspect for x in single.protocol] and single.text == "—"
    with pytest.raises(ValueError, match="different tasks"):
        differences(base, vote.model_copy(update={"task": "gsm8k"}))


def test_the_report_compare_and_budget_tables_carry_the_column(run: Path) -> None:
    report = build_report(run, resamples=50)
    (task,) = report.tasks
    table = pairs_table(task)
    assert table.columns[-1] == "also differs" and "the difference may measure that too" in table.note
    cells = {(row[0], row[1]): row[-1] for row in table.rows}
    assert cells[("base", "same")] == "—" and cells[("base", "model")] == "model (numbers vs numbers-b)"
    assert cells[("base", "confidence")] == "template (Du vs confidence form)"
    assert "| also differs |" in report_markdown(report)

    ((name, pair),) = compare_conditions(run, "temperature", "base", resamples=50)
    (accuracy, *_) = comparison_tables(name, pair)
    assert ("also differs", "temperature (1.0 vs 0.7)") in accuracy.rows and "may measure" in accuracy.note
    output = CliRunner().invoke(app, ["compare", str(run), "top-p", "base", "--resamples", "100"]).output
    assert "top_p (0.9 vs 1.0)" in output

    (row,) = equal_budget(run, "max-tokens", "vote-6", "calls", resamples=50)
    assert row.differs is not None and row.differs.text == "max_tokens (256 vs 512)"  # the pool's 6 agents are k
    budget = equal_budget_rows_table([row])
    assert budget.columns[-1] == "also differs" and budget.rows[0][-1] == "max_tokens (256 vs 512)"
    assert "may measure that too" in budget.note


ACROSS = Path(__file__).parent.parent / "runs" / "replicate" / "across.sqlite"


@pytest.mark.skipif(not ACROSS.is_file(), reason="the committed across store is not here")
def test_across_pairs_name_what_else_differs() -> None:
    """mad-m2 starts from Choi's template with 4 agents (and Choi's random ties); society from vote's very
    requests; the confidence arm from Zhu's confidence form. Read in well under a few seconds."""
    start = time.perf_counter()
    profiles = arm_profiles(ACROSS)
    assert time.perf_counter() - start < 3
    vote = profiles[("vote", "arithmetic")]

    def also(name: str) -> str:
        return differences(profiles[(name, "arithmetic")], vote).text

    assert also("mad-m2") == "template (Choi vs Du); agents (4 vs 3); tie rule (random vs first)"
    assert also("society") == "—"
    assert also("confidence") == "template (confidence form vs Du)"
