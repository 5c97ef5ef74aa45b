"""Liang et al.'s debate and the stopping study's Liang conditions, with scripted agents.

Pinned against Liang et al.'s release (Skytliang/Multi-Agents-Debate, code/debate4tran.py and
code/utils/config4all.json) and the stopping study (stopping2026-fixed-vs-adaptive-stopping.txt).
"""

from __future__ import annotations

from typing import cast

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import FinalStatus, resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.stopping.consensus import Consensus
from moot.debate.components.stopping.judge import read_judge
from moot.debate.components.stopping.moderator import ModeratorPreference
from moot.debate.protocols import ProtocolSpec
from moot.debate.schedules.liang import moderator_prompt, read_moderator
from moot.errors import ConfigError
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from moot.tasks.choice import MultipleChoiceTask, field_letter
from moot.tasks.data import Row
from tests.helpers import SCRIPTED, scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


class Choice(MultipleChoiceTask):
    """A multiple-choice task with no data: enough to render and read one question."""

    name = "choice-test"
    description = "test"

    def offline_rows(self, split: str) -> list[Row]:
        return []

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        return []


CHOICE = Choice()
MC = Question(
    id="mc1",
    prompt="Which city is the capital of France?\n\n(A) London\n(B) Paris\n(C) Rome\n(D) Oslo",
    gold="B",
    metadata={"choices": ["London", "Paris", "Rome", "Oslo"]},
)


def sent(agent: Agent) -> list[GenerationRequest]:
    return cast(ScriptedBackend, agent.backend).requests


def moderator(*replies: str) -> Agent:
    return Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(list(replies)))


def ruling(answer: str, preference: str = "Yes", confidence: int | None = None) -> str:
    extra = f', "confidence": {confidence}' if confidence is not None else ""
    return (
        f'```json\n{{"Whether there is a preference": "{preference}", "Supported Side": "Negative", '
        f'"Reason": "r", "debate_answer": "{answer}"{extra}}}\n```'
    )


NO = ruling("", "No")


async def debate(protocol: ProtocolSpec, aff: list[str], neg: list[str], judge: Agent, task=TASK, question=QUESTION):  # type: ignore[no-untyped-def]
    affirmative, negative = scripted_agents(aff, neg)
    caller = Caller()
    result = await run_debate(question, task, protocol, [affirmative, negative], caller=caller, judge=judge)
    return result, affirmative, negative, caller


# -- 1. answers written by moderators and judges ----------------------------------------------------


@pytest.mark.parametrize(
    ("field", "letter"),
    [
        ("B", "B"),
        ("B)", "B"),
        ("B.", "B"),
        ("Option B", "B"),
        ("(B) Paris", "B"),
        ("answer: B", "B"),
        ("**B**", "B"),
        ("The answer is B", "B"),
        ("{final answer: (B)}", "B"),
        ("B: Paris", "B"),
        ("Choice (C)", "C"),
        ("paris", "B"),  # exactly one choice's text
        ("Paris.", "B"),
        ("the Paris", "B"),  # a leading article aside
        ("The capital is Paris", None),  # prose mentioning a choice is not read
        ("Not Paris", None),
        ("Paris or Rome", None),
        ("Parisian", None),
        ("A person would say so", None),  # an article, not a letter
        ("B.C. was earlier", None),
        ("E", None),  # outside the question's letters
        ("Neither", None),
        ("", None),
    ],
)
def test_a_moderators_answer_field_is_read_as_a_letter(field: str, letter: str | None) -> None:
    assert field_letter(field, MC) == letter
    assert CHOICE.read_answer(field, MC).answer == letter


def test_a_bare_letter_is_no_answer_in_a_full_reply_but_is_one_in_a_field() -> None:
    assert CHOICE.extract("B").answer is None  # an agent's reply must state its answer in a form
    assert CHOICE.read_answer("B", MC).answer == "B"


@pytest.mark.parametrize(("field", "number"), [("-19", "-19"), ("The answer is -19.", "-19"), ("x", None)])
def test_numeric_answer_fields(field: str, number: str | None) -> None:
    assert TASK.read_answer(field, QUESTION).answer == number


def test_a_judges_bare_letter_is_read() -> None:
    reading = read_judge(CHOICE, MC, '{"answer": "B", "confidence": 95}')
    assert (reading.answer, reading.confidence) == ("B", 95.0)
    assert read_judge(CHOICE, MC, '{"answer": "Option C", "confidence": 60}').answer == "C"


async def test_liang_adaptive_break_fires_on_a_bare_letter_and_scores_it() -> None:
    """Today's failure: a bare "B" in debate_answer was unparsed, so the break never fired."""
    result, *_ = await debate(resolve_protocol("liang"), ["a (A)"], ["b (B)"], moderator(ruling("B")), CHOICE, MC)
    assert (result.rounds_used, result.stop_reason, result.final_answer, result.correct) == (
        1,
        "moderator_answer",
        "B",
        True,
    )


# -- 2. Liang et al. as released, and the stopping study ------------------------------------------


async def test_liang_debaters_speak_in_turn_with_the_releases_prompts() -> None:
    """Liang's own setting (``instruction = "none"``): the debater meta prompt alone, as the release sends it."""
    result, aff, neg, caller = await debate(
        resolve_protocol("liang", components={"instruction": "none"}),
        ["aff0 3", "aff1 4"],
        ["neg0 5", "neg1 -19"],
        moderator(NO, ruling("-19")),
    )
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "moderator_answer", "-19")
    assert result.correct and result.final_judge is None
    assert caller.usage.calls == 2 * 2 + 2
    topic = TASK.render(QUESTION)
    assert sent(aff)[0].messages[0].content == META.format(topic=topic)
    assert sent(aff)[0].messages[-1].content == topic
    assert sent(aff)[1].messages[-1].content == (
        "neg0 5\n\nDo you agree with my perspective? Please provide your reasons and answer."
    )
    assert (
        sent(neg)[0].messages[-1].content == "aff0 3\n\nYou disagree with my answer. Provide your answer and reasons."
    )
    assert sent(neg)[1].messages[-1].content == (
        "aff1 4\n\nDo you agree with my perspective? Please provide your reasons and answer."
    )


META = (
    "You are a debater. Hello and welcome to the debate. It's not necessary to fully agree with each other's "
    "perspectives, as our objective is to find the correct answer.\nThe debate topic is stated as follows:\n{topic}"
)


async def test_by_default_liangs_debaters_get_the_tasks_instruction_before_their_meta_prompt() -> None:
    """Every other arm's agents get arithmetic's step-by-step system prompt; so do Liang's debaters (then
    Liang's meta prompt), so that a comparison measures the protocol, not the instruction."""
    protocol = resolve_protocol("liang")
    assert protocol.instruction == "task" and TASK.system_prompt
    _, aff, neg, _ = await debate(protocol, ["aff0 3"], ["neg0 5"], moderator(ruling("3")))
    expected = TASK.system_prompt + "\n\n" + META.format(topic=TASK.render(QUESTION))
    assert sent(aff)[0].messages[0].content == sent(neg)[0].messages[0].content == expected
    assert [m.role for m in sent(aff)[0].messages] == ["system", "user"]  # one system message, not two


async def test_the_moderator_prompt_is_the_releases() -> None:
    judge = moderator(NO, ruling("-19"))
    await debate(resolve_protocol("liang"), ["aff0 3", "aff1 4"], ["neg0 5", "neg1 -19"], judge)
    mod = sent(judge)
    assert mod[0].messages[0].content == (
        "You are a moderator. There will be two debaters involved in a debate. They will present their answers and "
        f'discuss their perspectives on the following topic: "{TASK.render(QUESTION)}"\nAt the end of each round, '
        "you will evaluate answers and decide which is correct."
    )
    assert mod[0].messages[-1].content == (
        "Now the first round of debate for both sides has ended.\n\nAffirmative side arguing:\naff0 3\n\n"
        "Negative side arguing: neg0 5\n\nYou, as the moderator, will evaluate both sides' answers and determine if "
        "there is a clear preference for an answer candidate. If so, please summarize your reasons for supporting "
        "affirmative/negative side and give the final answer that you think is correct, and the debate will "
        "conclude. If not, the debate will continue to the next round. Now please output your answer in json "
        'format, with the format as follows: {"Whether there is a preference": "Yes or No", "Supported Side": '
        '"Affirmative or Negative", "Reason": "", "debate_answer": ""}. Please strictly output in JSON format, do '
        "not output irrelevant content."
    )
    assert mod[1].messages[-1].content.startswith("Now the second round of debate")
    assert len(mod[1].messages) == 4  # the moderator keeps its own history


async def test_liang_breaks_on_a_non_empty_answer_without_a_stated_preference() -> None:
    """The release reads debate_answer only; moot 0.1 also required "Whether there is a preference": "Yes"."""
    result, *_ = await debate(resolve_protocol("liang"), ["a 1"], ["b 2"], moderator(ruling("-19", "No")))
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (1, "moderator_answer", "-19")


async def test_liang_breaks_on_an_answer_the_task_cannot_read_and_scores_it_wrong() -> None:
    result, *_ = await debate(resolve_protocol("liang"), ["a 1"], ["b 2"], moderator(ruling("both are right")))
    assert (result.rounds_used, result.stop_reason, result.status, result.correct) == (
        1,
        "moderator_answer",
        FinalStatus.UNPARSED,
        False,
    )
    assert result.rounds[0].judge is not None and result.rounds[0].judge.answer_text == "both are right"


async def test_moot_0_1_preference_rule_stays_available_by_name() -> None:
    protocol = resolve_protocol("liang-preference")
    result, *_ = await debate(protocol, ["a 1", "a 2"], ["b 1", "b -19"], moderator(ruling("1", "No"), ruling("-19")))
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "moderator_preference", "-19")


async def test_the_final_judge_reads_the_first_round_answers() -> None:
    """The release's judge reads memory_lst[2] of each side: their first answers, not the last."""
    judge = moderator(NO, NO, "Candidates: 1 and 2.", '{"Reason": "x", "debate_answer": "-19"}')
    result, *_ = await debate(
        resolve_protocol("liang-fixed"), ["first-aff 1", "last-aff 3"], ["first-neg 2", "last-neg 4"], judge
    )
    assert (result.rounds_used, result.stop_reason, result.final_answer, result.correct) == (
        2,
        "max_rounds",
        "-19",
        True,
    )
    assert result.final_judge is not None and result.final_judge.calls == 2
    final = sent(judge)[2].messages
    assert final[1].content == (
        "Affirmative side arguing: first-aff 1\n\nNegative side arguing: first-neg 2\n\n"
        "Now, what answer candidates do we have? Present them without reasons."
    )
    decision = sent(judge)[3].messages
    assert decision[2].content == "Candidates: 1 and 2."
    assert decision[3].content.startswith("Therefore, " + TASK.render(QUESTION))


async def test_liang_fixed_ignores_an_early_answer_and_asks_the_final_judge() -> None:
    judge = moderator(ruling("1"), ruling("2"), "c", '{"Reason": "x", "debate_answer": "-19"}')
    result, *_ = await debate(resolve_protocol("liang-fixed"), ["a 1", "b 2"], ["c 3", "d 4"], judge)
    assert (result.rounds_used, result.final_answer) == (2, "-19")
    assert result.final_judge is not None


def test_the_strict_prompt_asks_confidence_and_an_empty_answer_while_more_rounds_may_help() -> None:
    strict = moderator_prompt(0, "a", "b", "strict").content
    assert '"confidence": "0-100"' in strict
    assert "If you think further rounds of debate may help improve the answer, leave debate_answer empty." in strict
    assert "confidence" not in moderator_prompt(0, "a", "b").content


@pytest.mark.parametrize(
    ("reply", "stops"),
    [
        (ruling("-19", "Yes", 90), True),
        (ruling("-19", "Yes", 89), False),  # below 90
        (ruling("-19", "No", 95), False),  # no preferred option
        (ruling("", "Yes", 95), False),  # an empty debate_answer: more rounds may help
        (ruling("-19", "Yes"), False),  # no confidence
    ],
)
async def test_the_strict_rule_needs_a_preference_an_answer_and_confidence_90(reply: str, stops: bool) -> None:
    protocol = resolve_protocol("liang-strict", rounds=2)
    judge = moderator(reply, ruling("-19", "Yes", 99))
    result, *_ = await debate(protocol, ["a 1", "a 2"], ["b 1", "b 2"], judge)
    assert result.rounds_used == (1 if stops else 2)
    assert result.stop_reason == "moderator_confident"
    assert "leave debate_answer empty" in sent(judge)[0].messages[-1].content


async def test_strict_at_the_cap_goes_to_the_final_judge() -> None:
    judge = moderator(ruling("1", "Yes", 50), ruling("2", "Yes", 60), "c", '{"Reason": "x", "debate_answer": "-19"}')
    result, *_ = await debate(resolve_protocol("liang-strict", rounds=2), ["a 1", "b 2"], ["c 3", "d 4"], judge)
    assert (result.stop_reason, result.final_answer) == ("max_rounds", "-19")
    assert result.final_judge is not None


async def test_bad_json_gets_one_repair() -> None:
    judge = moderator("not json at all", ruling("-19", "Yes", 95))
    result, _, _, caller = await debate(resolve_protocol("liang-strict", rounds=3), ["a 1"], ["b 2"], judge)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (1, "moderator_confident", "-19")
    assert sent(judge)[1].messages[-1].content.startswith("Your reply was not valid JSON")
    assert result.rounds[0].judge is not None and result.rounds[0].judge.calls == 2
    assert caller.usage.calls == 2 + 2


async def test_the_prompt_matched_control_scores_the_round_2_answer_directly() -> None:
    protocol = resolve_protocol("liang-prompt-matched")
    assert (protocol.rounds, protocol.stopping.kind) == (2, "fixed")
    judge = moderator(ruling("1", "Yes", 99), ruling("-19", "Yes", 40))
    result, _, _, caller = await debate(protocol, ["a 1", "b 2"], ["c 3", "d 4"], judge)
    assert (result.rounds_used, result.stop_reason, result.final_answer, result.correct) == (
        2,
        "max_rounds",
        "-19",
        True,
    )
    assert result.final_judge is None and caller.usage.calls == 2 * 3  # no final judge: 600 calls per 100
    assert "leave debate_answer empty" in sent(judge)[1].messages[-1].content


async def test_a_blank_round_2_answer_in_the_control_is_wrong() -> None:
    judge = moderator(ruling("-19", "Yes", 99), ruling("", "No", 40))
    result, *_ = await debate(resolve_protocol("liang-prompt-matched"), ["a", "b"], ["c", "d"], judge)
    assert (result.final_answer, result.status, result.correct) == (None, FinalStatus.UNPARSED, False)


def test_the_control_runs_exactly_two_rounds() -> None:
    with pytest.raises(ConfigError, match="exactly 2 rounds"):
        resolve_protocol("liang-prompt-matched", rounds=3)


async def test_nothing_parses_falls_back_to_the_final_judge() -> None:
    judge = moderator("??", "still ??", "cands", "no json", "no json again")
    result, *_ = await debate(resolve_protocol("liang", rounds=1), ["a 1"], ["b 2"], judge)
    assert result.final_answer is None and result.status is FinalStatus.UNPARSED and not result.correct
    assert result.final_judge is not None and result.final_judge.calls == 3  # candidates, decision, repair


def test_read_moderator_keeps_the_raw_answer_field() -> None:
    reading = read_moderator(ruling("  B ", "Yes", 85))
    assert (reading.valid, reading.preference, reading.answer_text, reading.confidence) == (True, True, "B", 85.0)


def test_liang_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="'liang' uses exactly 2 agents"):
        resolve_protocol("liang", agents=3)
    with pytest.raises(ConfigError, match="a moderator exists only in style 'liang'"):
        resolve_protocol("society", components={"stopping": ModeratorPreference()})
    with pytest.raises(ConfigError, match="style 'liang' stops by"):
        resolve_protocol("liang", components={"stopping": Consensus()})
    with pytest.raises(ConfigError, match="asks for confidence"):
        resolve_protocol(
            "liang",
            components={"style": {"kind": "liang", "moderator_prompt": "liang"}, "stopping": "moderator_confidence"},
        )


async def test_moot_0_1_confident_rule_stays_available_by_name() -> None:
    """liang-confident: the confidence field without the strict instruction; no preference needed, but
    an answer that parses. Stored runs of moot 0.1 read 'moderator_confidence' with this meaning."""
    protocol = resolve_protocol("liang-confident", rounds=3)
    judge = moderator(ruling("nothing", "Yes", 99), ruling("-19", "No", 95))
    result, *_ = await debate(protocol, ["a", "b"], ["c", "d"], judge)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "moderator_confident", "-19")
    prompt = sent(judge)[0].messages[-1].content
    assert '"confidence": "0-100"' in prompt and "leave debate_answer empty" not in prompt


def test_stored_rule_names_keep_their_meaning() -> None:
    """A run stored by moot 0.1 named 'moderator' for the preference rule: it still means that."""
    assert resolve_protocol("liang-preference").stopping.kind == "moderator"
    assert resolve_protocol("liang").stopping.kind == "moderator_answer"
    assert resolve_protocol("liang-strict").stopping.require_preference  # type: ignore[attr-defined]
