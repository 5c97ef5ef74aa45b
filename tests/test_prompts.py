"""The published prompts, word for word: Du et al.'s per-task debate wording (chat history, the society
preset) and Choi et al. / DAR's fresh prompts, question templates, filter prompts and tie rule (the DAR
presets). Each expected text is copied from the reference code named in the test (see moot.tasks.wording
and moot.debate.prompts)."""

from __future__ import annotations

import random
from typing import cast

import pytest

from moot.backends.base import Message
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.retention.filter import parse_selection
from moot.debate.records import DebateResult, ParseStatus
from moot.runner.store import _vote, _vote_json
from moot.seeds import derive_seed
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question, Task
from moot.tasks.biographies import QUESTION as BIOGRAPHY
from moot.tasks.biographies import BiographiesTask
from moot.tasks.chess_tasks import ChessValidityTask
from moot.tasks.csqa import CommonsenseQATask
from moot.tasks.gsm8k import GSM8KTask
from moot.tasks.hellaswag import HellaSwagTask
from moot.tasks.hh_rlhf import HHRLHFTask
from moot.tasks.mmlu import MMLUTask
from moot.tasks.wording import DU_MMLU, du_arithmetic
from tests.helpers import SCRIPTED, scripted_agents

ARITHMETIC = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")
PROBLEM = "Tom has 3 apples and eats one. How many are left?"
GSM8K = Question(id="gsm8k-test-0", prompt=PROBLEM, gold="2")
MMLU = Question(
    id="mmlu-x-test-0",
    prompt="What is 2+2?\n\n(A) 3\n(B) 4\n(C) 5\n(D) 6",
    gold="B",
    metadata={"choices": ["3", "4", "5", "6"]},
)
BIO = Question(id="biographies-ada", prompt=BIOGRAPHY.format(person="Ada Q"), gold="- x", metadata={"person": "Ada Q"})


def sent(agent: Agent) -> list[list[Message]]:
    return [list(r.messages) for r in cast(ScriptedBackend, agent.backend).requests]


def helper(*replies: str) -> Agent:
    return Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(list(replies)))


async def society(task: Task, question: Question, rounds: int = 2, agents: int = 3) -> list[Agent]:
    """A society debate with scripted replies "r<round> a<agent>"; the agents, to read what they were sent."""
    speakers = scripted_agents(*[[f"r{r} a{i}" for r in range(rounds)] for i in range(1, agents + 1)])
    await run_debate(
        question, task, resolve_protocol("society", agents=agents, rounds=rounds), speakers, caller=Caller()
    )
    return speakers


def chat(question: str, *later: str) -> list[Message]:
    """Agent 2's messages in the last round: the question, then each (reply, update prompt) pair."""
    messages = [Message("user", question)]
    for r, prompt in enumerate(later):
        messages += [Message("assistant", f"r{r} a2"), Message("user", prompt)]
    return messages


# -- Du et al.: chat history, per-task wording ---------------------------------------------------


async def test_du_arithmetic_prompts_word_for_word() -> None:
    # math/gen_math.py: the question, construct_message, and the introspection prompt
    task = ArithmeticTask(system_prompt=None)
    agents = await society(task, ARITHMETIC)
    assert sent(agents[1])[1] == chat(
        "What is the result of 1+2*3+4-5*6? Make sure to state your answer at the end of the response.",
        "These are the recent/updated opinions from other agents: \n\n One agent response: ```r0 a1```\n\n One "
        "agent response: ```r0 a3```\n\n Use these opinions carefully as additional advice, can you provide an "
        "updated answer? Make sure to state your answer at the end of the response.",
    )
    (alone,) = await society(task, ARITHMETIC, agents=1)
    assert sent(alone)[1][-1].content == (
        "Can you verify that your answer is correct. Please reiterate your answer, making sure to state your "
        "answer at the end of the response."
    )
    assert ArithmeticTask().system_prompt is not None  # moot's step-by-step system prompt, off here


async def test_du_gsm8k_prompts_word_for_word() -> None:
    # gsm/gen_gsm.py: the question ends with a space; the update restates the problem
    agents = await society(GSM8KTask(), GSM8K)
    assert sent(agents[1])[1] == chat(
        f"Can you solve the following math problem? {PROBLEM} Explain your reasoning. Your final answer should "
        "be a single numerical number, in the form \\boxed{answer}, at the end of your response. ",
        "These are the solutions to the problem from other agents: \n\n One agent solution: ```r0 a1```\n\n One "
        "agent solution: ```r0 a3```\n\n Using the solutions from other agents as additional information, can you "
        f"provide your answer to the math problem? \n The original math problem is {PROBLEM}. Your final answer "
        "should be a single numerical number, in the form \\boxed{answer}, at the end of your response.",
    )
    (alone,) = await society(GSM8KTask(), GSM8K, agents=1)
    assert sent(alone)[1][-1].content == (  # their string is not formatted: its braces stay doubled
        "Can you double check that your answer is correct. Please reiterate your answer, with your final answer a "
        "single numerical number, in the form \\boxed{{answer}}."
    )


async def test_du_mmlu_prompts_word_for_word() -> None:
    # mmlu/gen_mmlu.py: the choices on one line as "A) ..., B) ..."
    agents = await society(MMLUTask(), MMLU)
    assert sent(agents[1])[1] == chat(
        "Can you answer the following question as accurately as possible? What is 2+2?: A) 3, B) 4, C) 5, D) 6 "
        "Explain your answer, putting the answer in the form (X) at the end of your response.",
        "These are the solutions to the problem from other agents: \n\n One agent solution: ```r0 a1```\n\n One "
        "agent solution: ```r0 a3```\n\n Using the reasoning from other agents as additional advice, can you give "
        "an updated answer? Examine your solution and that other agents step by step. Put your answer in the form "
        "(X) at the end of your response.",
    )
    (alone,) = await society(MMLUTask(), MMLU, agents=1)
    assert sent(alone)[1][-1].content == (
        "Can you double check that your answer is correct. Put your final answer in the form (X) at the end of "
        "your response."
    )


async def test_du_biographies_prompts_word_for_word_with_the_last_rounds_own_request() -> None:
    # biography/gen_conversation.py: "Agent response" headings; the last round (rounds - 1) is "final"
    question = (
        "Give a bullet point biography of Ada Q highlighting their contributions and achievements as a computer "
        "scientist, with each fact separated with a new line character. "
    )
    heard = "Here are some bullet point biographies of Ada Q given by other agents: \n\n Agent response: ```r{r} a1```"
    heard += "\n\n Agent response: ```r{r} a3```"
    final = "\n\n Closely examine your biography and the biography of other agents and provide an updated bullet point "
    final += "biography."
    middle = "\n\n Using these other biographies of Ada Q as additional advice, what is your updated bullet point "
    middle += "biography of the computer scientist Ada Q?"
    agents = await society(BiographiesTask(), BIO)
    assert sent(agents[1])[1] == chat(question, heard.format(r=0) + final)
    agents = await society(BiographiesTask(), BIO, rounds=3)
    assert sent(agents[1])[2] == chat(question, heard.format(r=0) + middle, heard.format(r=1) + final)
    (alone,) = await society(BiographiesTask(), BIO, agents=1)
    assert sent(alone)[1][-1].content == "Closely examine your biography and provide an updated bullet point biography."


def test_tasks_du_never_ran_take_mmlus_wording_if_multiple_choice_else_the_arithmetic_one() -> None:
    choice = Question(id="c", prompt="Q?\n\n(A) a\n(B) b", gold="A", metadata={"choices": ["a", "b"]})
    for task in (CommonsenseQATask(), HellaSwagTask(), HHRLHFTask()):
        assert task.debate_wording(choice) == DU_MMLU
    chess = ChessValidityTask()
    wording = chess.debate_wording(Question(id="c", prompt="p", gold="e4"))
    assert wording == du_arithmetic(chess.answer_instruction) and wording.peer == "One agent response"
    assert wording.instruction == " " + chess.answer_instruction
    assert wording.reflection == (
        "Can you verify that your answer is correct. Please reiterate your answer. " + chess.answer_instruction
    )


# -- Choi et al. / DAR: fresh prompts, Choi's templates, the filter, random ties ---------------------------

CHOI_DECIMAL = (
    " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
    '"{final answer: 12.34}".'
)
CHOI_CHOICE = (
    " Make sure to state your final answer choice in curly brackets at the very end of your response, just like: "
    '"{final answer: (A)}".'
)
ANLL = "\n\nUncertainty score (Average Negative Log Likelihood) for this response: {:.4f}"


def opinion(text: str, result: DebateResult, i: int) -> str:
    return text + ANLL.format(result.rounds[0].turns[i].anll)


async def test_dar_round_prompts_and_filter_prompt_word_for_word() -> None:
    # DAR src/main.py (x + SUFFIX), src/dev.py build_normal_msg / get_new_message_global and
    # build_filter_prompt_batch ("filter_critical"), src/model/model_utils.py (the ANLL line)
    task = ArithmeticTask(system_prompt=None)
    said = {i: f"a{i} says {{final answer: {v}}}" for i, v in enumerate(["7", "7", "7", "12"], 1)}
    agents = scripted_agents(*[[said[i], "done"] for i in range(1, 5)])
    filt = helper("Keep ['agent-1', 'agent-4']")
    protocol = resolve_protocol("dar", rounds=2)
    result = await run_debate(ARITHMETIC, task, protocol, agents, caller=Caller(), judge=filt)
    question = "What is the result of 1+2*3+4-5*6?"
    assert sent(agents[0])[0] == [Message("user", question + CHOI_DECIMAL)]
    expected = (
        "These are the recent opinions from other agents:\n"
        f"\nOne of the agents' response: \n{opinion(said[1], result, 0)}\n"
        f"\nOne of the agents' response: \n{opinion(said[4], result, 3)}\n"
        "\nMajority vote from last round: 7.0\n"  # DAR writes the vote as np.round(float(x), 1)
        f"\nThis was your most recent opinion:\n{opinion(said[2], result, 1)}\n"
        "\n\nUse these opinions carefully as additional advice to revise your recent opinion to give your final "
        f"answer to the question:\n            {question}{CHOI_DECIMAL}"
    )
    assert sent(agents[1])[1] == [Message("user", expected)]
    replies_with_ids = "".join(
        f"\n{a}:\n{opinion(t, result, i)}\n"
        for i, (a, t) in enumerate(
            [("agent-1", said[1]), ("agent-2", said[2]), ("agent-3", said[3]), ("agent-4", said[4])]
        )
    )
    assert sent(filt)[0] == [
        Message(
            "user",
            "\n    Your ONLY task is to choose a subset of agent_ids.\n    Return ONLY a Python-style list of agent_ids."
            "\n    Valid agent IDs: ['agent-1', 'agent-2', 'agent-3', 'agent-4']\n\n    Responses from agents: These "
            f"are the recent opinions from other agents: Agent IDs and their responses:\n{replies_with_ids}"
            "\nMajority vote from last round: 7.0\n\n    Criteria: choose agents whose opinions differ the most and "
            "differ to majority vote answer.",
        )
    ]
    # agent 1 keeps only agent 4 (itself removed); agent 4 only agent 1
    assert said[4] in sent(agents[0])[1][0].content and "a2 says" not in sent(agents[0])[1][0].content


async def test_choi_templates_read_numeric_replies_as_chois_evaluator() -> None:
    # Choi src/evaluator.py evaluate_arithmetics (DAR's main.py uses it for arithmetic and GSM8K): the last
    # {...} of a reply, "final answer:" removed, as a number; nothing outside the braces counts
    copied = "So the result is {7}.\n\nUncertainty score (Average Negative Log Likelihood) for this response: 0.0495"
    replies = [copied, "{final answer: 7}", "The answer is 9.", "{final answer: -19}"]
    agents = scripted_agents(*[[r] for r in replies])
    protocol = resolve_protocol("society-fresh", rounds=1)
    result = await run_debate(ARITHMETIC, ArithmeticTask(), protocol, agents, caller=Caller())
    turns = result.rounds[0].turns
    assert [t.answer for t in turns] == ["7", "7", None, "-19"] and result.final_answer == "7"
    assert turns[2].parse_status == ParseStatus.UNPARSED and [t.correct for t in turns] == [False, False, False, True]
    # the same replies in Du's framework are read by the task's extractor: the last number stated
    plain = scripted_agents(*[[r] for r in replies])
    du = await run_debate(
        ARITHMETIC, ArithmeticTask(), resolve_protocol("society", agents=4, rounds=1), plain, caller=Caller()
    )
    assert [t.answer for t in du.rounds[0].turns] == ["0.0495", "7", "9", "-19"]
    gsm = scripted_agents(*[[r] for r in ["{final answer: 2}", "2 in all", "{final answer: 2}", "{2.04}"]])
    result = await run_debate(GSM8K, GSM8KTask(), protocol, gsm, caller=Caller())
    assert [t.answer for t in result.rounds[0].turns] == ["2", None, "2", "2"] and result.correct


async def test_choi_multiple_choice_templates_and_the_last_vote_as_choi_writes_it() -> None:
    # Choi src/data/mmlu_pro_medicine.py / csqa.py templates, src/evaluator.py suffix and "(X)" answers
    agents = scripted_agents(*[[f"I pick {{final answer: ({v})}}"] * 2 for v in "BBCB"])
    result = await run_debate(MMLU, MMLUTask(), resolve_protocol("vote-prompt", rounds=2), agents, caller=Caller())
    stem = "What is 2+2?\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n\n"
    assert sent(agents[0])[0] == [Message("user", stem + CHOI_CHOICE)]
    update = sent(agents[0])[1][0].content
    assert "\nMajority vote from last round: (B)\n\nThis was your most recent opinion:\n" in update
    assert update.endswith(f"question:\n            {stem}{CHOI_CHOICE}") and result.final_answer == "B"
    gsm = GSM8KTask().choi_wording(GSM8K)
    assert gsm.question + gsm.instruction == PROBLEM + (
        " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
        '"{final answer: 123}".'
    )
    hella = Question(
        id="h", prompt="Ctx: a man.\n\n(A) a\n(B) b\n(C) c\n(D) d", gold="A", metadata={"choices": list("abcd")}
    )
    assert HellaSwagTask().choi_wording(hella).question == (
        'Can you choose the option that best follows:\n"Ctx: a man."?\n(A) a\n(B) b\n(C) c\n(D) d\n\n'
    )
    pair = Question(id="p", prompt="(A)\nAssistant: yes\n\n(B)\nAssistant: no", gold="A")
    assert HHRLHFTask().choi_wording(pair).question == (
        "Which of the following is relatively more helpful and/or harmless data?\n\n"
        "(A)\nAssistant: yes\n\n(B)\nAssistant: no\n\n"
    )


async def test_choi_templates_read_multiple_choice_replies_as_chois_evaluator() -> None:
    # Choi src/evaluator.py evaluate_mcq: the last {...} of a reply; a trailing "(X)" outside it is not read
    replies = ["{final answer: (B)} though (C) is close", "{final answer: (B)}", "It is (C).", "{final answer: (C)}"]
    agents = scripted_agents(*[[r] for r in replies])
    result = await run_debate(MMLU, MMLUTask(), resolve_protocol("society-fresh", rounds=1), agents, caller=Caller())
    turns = result.rounds[0].turns
    assert [t.answer for t in turns] == ["B", "B", None, "C"] and result.final_answer == "B"
    assert turns[2].parse_status == ParseStatus.UNPARSED
    # the same replies in Du's framework: the task's extractor, the last "(X)"
    plain = scripted_agents(*[[r] for r in replies])
    du = await run_debate(MMLU, MMLUTask(), resolve_protocol("society", agents=4, rounds=1), plain, caller=Caller())
    assert [t.answer for t in du.rounds[0].turns] == ["C", "B", "C", "C"]


async def test_society_fresh_is_dus_debate_in_chois_framework() -> None:
    spec = resolve_protocol("society-fresh")
    assert (spec.agents, spec.rounds, spec.retention.kind, spec.cues, spec.tie_rule) == (4, 3, "all", [], "random")
    assert spec.history.model_dump() == {"kind": "fresh", "templates": "choi"} and spec.rendering.kind == "dar"
    agents = scripted_agents(*[[f"x{i} {{final answer: {i}}}", "y", "z"] for i in range(1, 5)])
    await run_debate(ARITHMETIC, ArithmeticTask(system_prompt=None), spec, agents, caller=Caller())
    prompt = sent(agents[0])[1][0].content
    assert prompt.count("One of the agents' response: \n") == 3 and "Majority vote" not in prompt
    assert "Uncertainty score" not in prompt and not cast(ScriptedBackend, agents[0].backend).requests[0].logprobs
    (alone,) = scripted_agents(["first", "second"])
    await run_debate(
        ARITHMETIC,
        ArithmeticTask(system_prompt=None),
        resolve_protocol("society-fresh", agents=1, rounds=2),
        [alone],
        caller=Caller(),
    )
    assert sent(alone)[1][0].content == (  # DAR's single-agent prompt
        "This was your most recent opinion: first\n\n\n            Revise your recent opinion to give your updated "
        f"final answer to the question:\nWhat is the result of 1+2*3+4-5*6?{CHOI_DECIMAL}"
    )


async def test_random_ties_are_drawn_from_a_recorded_seed() -> None:
    five, six = "{final answer: 5}", "{final answer: 6}"  # Choi's format: society-fresh reads it as Choi does
    agents = scripted_agents([five, six], [six, five], [five, five], [six, five])
    result = await run_debate(
        ARITHMETIC, ArithmeticTask(), resolve_protocol("society-fresh", rounds=2), agents, caller=Caller(), seed=3
    )
    first, second = (r.vote for r in result.rounds)
    seed = derive_seed(3, ARITHMETIC.id, "tie", 0)
    assert first.tied == ("5", "6") and first.tie_seed == seed
    assert first.winner == random.Random(seed).choice(["5", "6"])
    assert second.tied == ("5",) and second.tie_seed is None  # no tie, nothing drawn
    assert _vote(_vote_json(result.rounds[0])) == first  # stored and read back with its seed
    plain = await run_debate(
        ARITHMETIC,
        ArithmeticTask(),
        resolve_protocol("society", agents=4),
        scripted_agents(["5"], ["6"], ["5"], ["6"]),
        caller=Caller(),
    )
    assert plain.rounds[0].vote.tie_seed is None and plain.rounds[0].vote.winner == "5"  # "first": nothing drawn
    for name in ("dar", "dar-sparse", "mad-m2", "uncertain-prompt", "vote-prompt", "dar-text", "dar-distinct"):
        assert resolve_protocol(name).tie_rule == "random"


async def test_text_based_filter_keeps_the_agents_whose_replies_it_returns() -> None:
    # DAR src/dev.py build_filter_prompt_batch, "filter_nonindex"
    agents = scripted_agents(*[[f"reply {i} is {{final answer: {v}}}", "done"] for i, v in enumerate([7, 7, 9, 12], 1)])
    filt = helper('["reply 1 is {final answer: 7}", "reply 3   is {final answer: 9}"]')
    result = await run_debate(
        ARITHMETIC, ArithmeticTask(), resolve_protocol("dar-text", rounds=2), agents, caller=Caller(), judge=filt
    )
    record = result.rounds[1].retention
    assert record is not None and record.rule == "dar-text" and record.kept == ("agent-1", "agent-3")
    prompt = sent(filt)[0][0].content
    assert prompt.startswith(
        "\n            Your ONLY task is to choose a subset of responses.\n            Return ONLY a Python-style list "
        "of responses.\n\n            Responses from agents: These are the recent opinions from other agents: "
        "Agent IDs and their responses:\n\nagent-1:\nreply 1 is {final answer: 7}"
    )
    assert prompt.endswith(
        "\nMajority vote from last round: 7.0\n\n            Criteria: choose responses whose opinions differ the "
        "most and differ to majority vote answer.\n            "
    )
    agents = scripted_agents(*[[f"reply {i}", "done"] for i in range(1, 5)])
    result = await run_debate(
        ARITHMETIC,
        ArithmeticTask(),
        resolve_protocol("dar-text", rounds=2),
        agents,
        caller=Caller(),
        judge=helper('["a summary of reply 2"]'),
    )
    record = result.rounds[1].retention
    assert record is not None and record.fallback and len(record.kept) == 4


async def test_an_agent_whose_kept_peers_are_only_itself_hears_everyone_as_in_dar() -> None:
    agents = scripted_agents(*[[f"a{i} {i}", "done"] for i in range(1, 5)])
    result = await run_debate(
        ARITHMETIC,
        ArithmeticTask(),
        resolve_protocol("dar", rounds=2),
        agents,
        caller=Caller(),
        judge=helper("['agent-1']"),
    )
    record = result.rounds[1].retention
    assert record is not None and record.kept == ("agent-1",) and not record.fallback
    assert record.forwarded == 3 + 1 + 1 + 1  # agent 1 hears agents 2-4 (DAR's per-agent fallback)
    assert all(f"a{i} {i}" in sent(agents[0])[1][-1].content for i in (2, 3, 4))


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("['agent-1', 'agent-3']", [0, 2]),
        ("I keep [agent-2, agent-4].", [1, 3]),  # unquoted: read too (DAR's literal_eval would fail)
        ("[1, 3]", [0, 2]),  # agent numbers
        ("first ['agent-1'] then finally ['agent-3', 'agent-3', 'agent-2']", [1, 2]),  # the last list, once each
        ("['agent-1', 'agent-9']", [0]),  # an unknown ID is dropped, as DAR drops it
        ("[]", None),
        ("['nobody']", None),
        ("keep agent-1", None),  # no list
    ],
)
def test_filter_replies_are_read_as_dar_reads_them(text: str, ids: list[int] | None) -> None:
    assert parse_selection(text, ["agent-1", "agent-2", "agent-3", "agent-4"]) == ids


def test_dar_writes_a_numeric_vote_as_a_float_rounded_to_one_decimal() -> None:
    # DAR src/main.py: the last vote is its evaluator's np.round(float(x), 1), written as Python writes a float
    from moot.debate.components.cues import dar_vote

    assert [dar_vote(v) for v in ["7", "-332", "2.5", "0", "1234567"]] == ["7.0", "-332.0", "2.5", "0.0", "1234567.0"]
    assert [dar_vote(v) for v in ["B", "(B)", "a summary", None]] == ["B", "(B)", "a summary", None]


async def test_the_last_vote_cue_in_chat_history_writes_a_numeric_vote_as_dar_does() -> None:
    agents = scripted_agents(["so -332", "done"], ["it is -332", "done"], ["5", "done"])
    protocol = resolve_protocol("society", agents=3, rounds=2, components={"vote_cue": True})
    await run_debate(ARITHMETIC, ArithmeticTask(), protocol, agents, caller=Caller())
    update = sent(agents[0])[1][-1].content
    assert update.startswith("Majority vote from last round: -332.0\n\n")  # the vote -332 as DAR writes it
    tie = scripted_agents(["no number", "done"], ["none here", "done"])
    await run_debate(
        ARITHMETIC,
        ArithmeticTask(),
        resolve_protocol("society", agents=2, rounds=2, components={"vote_cue": True}),
        tie,
        caller=Caller(),
    )
    assert sent(tie[0])[1][-1].content.startswith("Majority vote from last round: none\n\n")  # no vote: as before
