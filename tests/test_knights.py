"""Knights and knaves: the solver on hand-checked puzzles, generation (seeded, prefix-stable, one solution
each), ids, the wording, reading replies (moot's, strict, Choi et al.'s form), scoring and the task's names."""

from __future__ import annotations

import random

import pytest

from moot.analysis.readers import READERS, task_kind
from moot.errors import ConfigError
from moot.tasks import Task, get_task
from moot.tasks.base import ParseStatus, Question
from moot.tasks.free import FreeQuestionTask
from moot.tasks.knights import (
    KINDS,
    MAX_TRIES,
    NAMES,
    STEP_BY_STEP,
    KnightsTask,
    Statement,
    canonical_roles,
    draw_puzzle,
    puzzle_text,
    read_answer_line,
    read_final_answer,
    read_roles,
    solutions,
)

T, F = True, False
NAMES3 = NAMES[:3]


# -- the solver ----------------------------------------------------------------------------------------
def test_the_classic_puzzle_has_one_solution() -> None:
    # A says: "B is a knave." B says: "A and I are both knaves." B cannot be a knight (he would be a knave),
    # so his statement is false: A is a knight, and A's statement is true.
    statements = [Statement("knave", (1,)), Statement("both-knaves", (0, 1))]
    assert solutions(statements, 2) == [(T, F)]


def test_a_puzzle_with_two_solutions_and_one_with_none() -> None:
    # A: "I am a knight." B: "A is a knight." All knights, or all knaves.
    assert solutions([Statement("knight", (0,)), Statement("knight", (0,))], 2) == [(T, T), (F, F)]
    # A: "I am a knave." No knight says it (it would be false), no knave (it would be true).
    assert solutions([Statement("knave", (0,)), Statement("knight", (1,))], 2) == []


def test_or_and_different_kinds_hand_checked() -> None:
    # A: "I am a knight or B is a knave." B: "A and I are different kinds."
    # A knave: his statement is false, so B is a knight, whose statement is then true. A knight with B a
    # knight makes B's statement false; with B a knave, true: neither fits. A knave with B a knave: A's is true.
    statements = [Statement("knight-or-knave", (0, 1)), Statement("different", (0, 1))]
    assert solutions(statements, 2) == [(F, T)]


@pytest.mark.parametrize(
    ("kind", "truth"),  # truth for (x, y) = (T, T), (T, F), (F, T), (F, F)
    [
        ("both-knights", (T, F, F, F)),
        ("both-knaves", (F, F, F, T)),
        ("knight-or-knave", (T, T, F, T)),
        ("if-knight-then-knave", (F, T, T, T)),
        ("same", (T, F, F, T)),
        ("different", (F, T, T, F)),
    ],
)
def test_each_two_person_statement_kind_means_what_it_says(kind: str, truth: tuple[bool, ...]) -> None:
    statement = Statement(kind, (0, 1))
    assert tuple(statement.holds(k) for k in ((T, T), (T, F), (F, T), (F, F))) == truth
    assert Statement("knight", (1,)).holds((F, T)) and not Statement("knave", (1,)).holds((F, T))


def test_malformed_statements_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown statement kind"):
        Statement("liar", (0,))
    with pytest.raises(ValueError, match="distinct people"):
        Statement("same", (1, 1))
    with pytest.raises(ValueError, match="distinct people"):
        Statement("knight", (0, 1))
    with pytest.raises(ValueError, match="2 people make 2 statements"):
        solutions([Statement("knight", (0,))], 2)
    with pytest.raises(ValueError, match="not one of the 2 people"):
        solutions([Statement("knight", (2,)), Statement("knight", (0,))], 2)


# -- generation ----------------------------------------------------------------------------------------
def test_questions_are_seeded_and_prefix_stable() -> None:
    task = KnightsTask()
    first = task.questions(30, seed=3)
    assert first == task.questions(30, seed=3)
    assert task.questions(7, seed=3) == first[:7]
    assert task.questions(7, seed=4) != first[:7]
    assert [q.id for q in first] == [f"knights3-s3-{i}" for i in range(30)]
    assert len({q.prompt for q in first}) > 20


def test_the_first_question_is_pinned() -> None:
    # stored runs regenerate their questions by id: the generator must not drift
    (question,) = KnightsTask().questions(1, seed=0)
    assert question.prompt == (
        "There are three people: Alice, Bob and Carol. Each of them is one of two kinds, a knight or a knave. "
        "Knights always tell the truth, and knaves always lie.\n"
        'Alice says: "Carol and I are different kinds."\n'
        'Bob says: "Alice and I are both knaves."\n'
        'Carol says: "Bob and Alice are both knights."\n'
        "Who is a knight and who is a knave?"
    )
    assert question.gold == "knight,knave,knave"
    assert question.metadata == {
        "people": ["Alice", "Bob", "Carol"],
        "statements": [
            {"speaker": 0, "kind": "different", "about": [0, 2]},
            {"speaker": 1, "kind": "both-knaves", "about": [0, 1]},
            {"speaker": 2, "kind": "both-knights", "about": [1, 0]},
        ],
        "solution": ["knight", "knave", "knave"],
    }


@pytest.mark.parametrize("people", [3, 4, 5, 6])
def test_every_generated_puzzle_has_exactly_one_solution_its_gold(people: int) -> None:
    task = KnightsTask(people)
    kinds = set()
    for question in task.questions(200, seed=11):
        statements = [Statement(s["kind"], tuple(s["about"])) for s in question.metadata["statements"]]
        assert [s["speaker"] for s in question.metadata["statements"]] == list(range(people))
        (only,) = solutions(statements, people)
        assert question.gold == ",".join("knight" if k else "knave" for k in only)
        assert question.metadata["solution"] == question.gold.split(",")
        assert question.prompt == puzzle_text(statements, NAMES[:people])
        assert task.score(question.gold, question)
        kinds |= {s.kind for s in statements}
    assert kinds == set(KINDS)


def test_a_size_without_a_unique_puzzle_is_refused() -> None:
    # one person can only say "I am a knight" (two solutions) or "I am a knave" (none)
    with pytest.raises(ConfigError, match="no puzzle of 1 people with exactly one solution in 50 draws"):
        draw_puzzle(random.Random(0), 1, tries=50)
    with pytest.raises(ConfigError, match="in 0 draws"):
        draw_puzzle(random.Random(0), 3, tries=0)
    statements, knights = draw_puzzle(random.Random(0), 3, tries=MAX_TRIES)
    assert solutions(statements, 3) == [knights]


def test_questions_by_id_regenerate_the_same_items() -> None:
    task = KnightsTask()
    items = task.questions(8, seed=5)
    assert task.by_ids([items[7].id, items[2].id, items[7].id]) == [items[7], items[2], items[7]]
    (negative,) = task.questions(1, seed=-2)
    assert task.by_ids(["knights3-s-2-0"]) == [negative]
    five = KnightsTask(5)
    assert five.by_ids(["knights5-s1-3"]) == five.questions(4, seed=1)[3:]


@pytest.mark.parametrize(
    ("qid", "message"),
    [
        ("arithmetic-s0-1", "not a knights question id"),
        ("knights3-s0", "not a knights question id"),
        ("knights-s0-1", "not a knights question id"),
        ("knights3-s1" + "0" * 20 + "-1", "not a knights question id"),
        ("knights5-s0-1", "has 5 people; task knights has 3"),
        ("knights3-s0-100000", "the index of a generated question is below 100,000"),
    ],
)
def test_bad_ids_are_refused(qid: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KnightsTask().by_ids([qid])


def test_the_question_count_is_limited() -> None:
    with pytest.raises(ConfigError, match="knights:4 is at most 100,000"):
        KnightsTask(4).questions(100_001, seed=0)


# -- names ---------------------------------------------------------------------------------------------
def test_the_task_and_its_parametrised_form() -> None:
    default = get_task("knights")
    assert isinstance(default, KnightsTask) and isinstance(default, Task)
    assert (default.name, default.people, default.names) == ("knights", 3, NAMES3)
    assert default.system_prompt == STEP_BY_STEP
    five = get_task("knights:5")
    assert isinstance(five, KnightsTask)
    assert (five.name, five.people) == ("knights:5", 5)
    assert five.questions(1, seed=0)[0].id == "knights5-s0-0"
    assert get_task("knights:3").name == "knights"
    assert get_task("knights:8").card().name == "knights:8"


@pytest.mark.parametrize("argument", ["1", "0", "9", "12", "x", "", "-3", "3.0", "1" * 10])
def test_a_bad_number_of_people_is_refused_with_the_range(argument: str) -> None:
    with pytest.raises(ConfigError, match="2 to 8"):
        get_task(f"knights:{argument}")


def test_the_class_refuses_a_bad_size_too() -> None:
    for people in (1, 9):
        with pytest.raises(ConfigError, match=f"the number of people is 2 to 8, got {people}"):
            KnightsTask(people)


# -- wording -------------------------------------------------------------------------------------------
def test_statements_in_words_with_the_speaker_as_i() -> None:
    statements = [
        Statement("if-knight-then-knave", (0, 2)),  # Alice
        Statement("both-knights", (2, 1)),  # Bob
        Statement("knight-or-knave", (0, 1)),  # Carol
    ]
    assert puzzle_text(statements, NAMES3) == (
        "There are three people: Alice, Bob and Carol. Each of them is one of two kinds, a knight or a knave. "
        "Knights always tell the truth, and knaves always lie.\n"
        'Alice says: "If I am a knight then Carol is a knave."\n'
        'Bob says: "Carol and I are both knights."\n'
        'Carol says: "Alice is a knight or Bob is a knave."\n'
        '"A or B" means that at least one of A and B is true.\n'
        '"If A then B" is false only when A is true and B is false.\n'
        "Who is a knight and who is a knave?"
    )


def test_render_asks_for_an_answer_line_naming_everyone() -> None:
    task = KnightsTask()
    question = task.questions(1, seed=0)[0]
    assert task.answer_instruction == (
        'End your response with a line of the form "Answer: Alice is a [knight/knave], Bob is a [knight/knave], '
        "Carol is a [knight/knave]\", replacing each [knight/knave] with that person's role."
    )
    assert task.render(question) == f"{question.prompt}\n{task.answer_instruction}"
    card = task.card()
    assert card.splits == ("generated",) and card.answer_format == task.answer_instruction
    assert task.provenance() == {"task": "knights", "source": "generated"}


# -- reading replies -----------------------------------------------------------------------------------
RIGHT = "knight,knave,knight"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Let me check.\nAnswer: Alice is a knight, Bob is a knave, Carol is a knight", RIGHT),
        ("Answer: Alice is a knave, Bob is a knave, Carol is a knight", "knave,knave,knight"),  # wrong, but read
        ("Answer: alice is a KNIGHT, Bob is an knave, and Carol is knight.", RIGHT),
        ("Answer: Alice: knight, Bob - knave, Carol \u2014 knight", RIGHT),
        ("**Answer:** **Alice** is a **knight**, **Bob** is a **knave**, **Carol** is a **knight**", RIGHT),
        ("### Final answer: Alice is a knight, Bob is a knave, Carol is a knight", RIGHT),
        ("- Answer: _Alice_ is a __knight__, `Bob` is a *knave*, Carol is a knight", RIGHT),
        ("Answer:\n- Alice: knight\n- Bob: knave\n- Carol: knight\n\nBob is a knight in another world.", RIGHT),
        # trailing text after the answer line is not read
        ("Answer: Alice is a knight, Bob is a knave, Carol is a knight.\nHope this helps, Alice is a knave!", RIGHT),
        # several answer lines: the last
        (
            "Answer: Alice is a knave, Bob is a knave, Carol is a knave\nWait, that fails.\n"
            "Answer: Alice is a knight, Bob is a knave, Carol is a knight",
            RIGHT,
        ),
        # the answer line names the same person twice alike: fine
        ("Answer: Alice is a knight, Bob is a knave, Carol is a knight (so Alice is a knight)", RIGHT),
        ("Answer: Alice is a knight, Bob is a knave", None),  # Carol missing
        ("Answer: Alice is a knight, Bob is a knave, Carol is a knight, Alice is a knave", None),  # contradictory
        ("Answer: Alice is a [knight/knave], Bob is a [knight/knave], Carol is a [knight/knave]", None),  # copied
        ("Answer: Alice is a knight or knave, Bob is a knave, Carol is a knight", None),
        ("Answer: Alice is not a knight, Bob is a knave, Carol is a knight", None),
        # an answer line settles it: the final paragraph is not read instead
        ("Answer: Alice is a knight\n\nAlice is a knight, Bob is a knave, Carol is a knight.", None),
        # no answer line: the last role of each person in the final paragraph
        ("Suppose Alice is a knave...\n\nSo Alice is a knight, Bob is a knave, and Carol is a knight.", RIGHT),
        ("Carol is a knave at first sight, but Alice is a knight, Bob is a knave, Carol is a knight.", RIGHT),
        ("Alice is a knight, Bob is a knave, Carol is a knight.\n\nThat is all.", None),
        ("If Alice is a knight, Bob is a knave and Carol is a knight.", None),  # a supposition, not an answer
        ("Suppose Alice is a knave: then Bob is a knave and Carol is a knight.", None),
        ("", None),
    ],
)
def test_replies_are_read_from_the_last_answer_line(text: str, answer: str | None) -> None:
    task = KnightsTask()
    extraction = task.extract(text)
    assert extraction.answer == answer
    assert extraction.status == (ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED)
    question = task.questions(1, seed=0)[0]
    assert task.read_reply(text, question) == extraction


def test_names_are_whole_words() -> None:
    names = NAMES[:5]
    line = "Answer: Alice is a knight, Bob is a knave, Carol is a knight, Dave is a knave, Eve is a knight"
    assert read_roles(line, names) == "knight,knave,knight,knave,knight"
    assert read_roles(line.replace("Eve is", "Evening is"), names) is None
    assert read_roles(line + ", Frank is a knave", names) == "knight,knave,knight,knave,knight"  # not a person here


def test_scoring_compares_canonical_roles() -> None:
    task = KnightsTask()
    question = Question(id="q", prompt="", gold=RIGHT)
    assert task.score(RIGHT, question)
    assert task.score(" Knight, knave , KNIGHT", question)
    assert not task.score("knight,knave,knave", question)
    assert not task.score("knight,knave", question)
    assert not task.score("", question)
    assert canonical_roles("[knight], *knave*, knight.") == RIGHT
    assert canonical_roles("knight, liar") is None


def test_a_judges_field_may_give_the_bare_roles() -> None:
    task = KnightsTask()
    question = task.questions(1, seed=0)[0]
    assert task.read_answer("knight, knave, knight", question).answer == RIGHT
    assert task.read_answer("{knight, knave, knight}", question).answer == RIGHT
    assert task.read_answer("Alice is a knight, Bob is a knave, Carol is a knight", question).answer == RIGHT
    assert task.read_answer("knight, knave", question).status == ParseStatus.UNPARSED


def test_choi_wording_asks_for_the_roles_in_order_and_reads_them() -> None:
    task = KnightsTask()
    question = task.questions(1, seed=0)[0]
    wording = task.choi_wording(question)
    assert wording.question == question.prompt
    assert wording.instruction == (
        " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
        '"{final answer: [knight/knave], [knight/knave], [knight/knave]}", giving the role of Alice, Bob and '
        "Carol in that order."
    )
    assert wording.read is not None
    assert wording.read("So... {final answer: knight, knave, knight}") == RIGHT
    assert wording.read("{final answer: knave, knave, knave} no: {Final Answer: Knight, Knave, Knight}") == RIGHT
    assert wording.read("{final answer: Alice is a knight, Bob is a knave, Carol is a knight}") == RIGHT
    assert wording.read("{final answer: knight, knave}") is None
    assert wording.read("Answer: Alice is a knight, Bob is a knave, Carol is a knight") is None
    assert read_final_answer("{knight,knave}", NAMES[:2]) == "knight,knave"


def test_an_own_question_reads_the_knights_way() -> None:
    free = FreeQuestionTask(KnightsTask())
    assert free.extract("Answer: Alice is a knight, Bob is a knave, Carol is a knave").answer == "knight,knave,knave"


def test_the_strict_reader_is_the_answer_line_and_no_paper_reader_applies() -> None:
    assert task_kind("knights") == "knights:3" and task_kind("knights:6") == "knights:6"
    line = "Thinking.\n\nAnswer: Alice is a knight, Bob is a knave, Carol is a knight"
    paragraph = "Thinking.\n\nAlice is a knight, Bob is a knave, Carol is a knight."
    strict = READERS["strict"]
    assert strict.applies("knights") and strict.read("knights", line) == RIGHT
    assert strict.read("knights", paragraph) is None  # moot's reading falls back to the final paragraph
    assert KnightsTask().extract(paragraph).answer == RIGHT
    assert read_answer_line(paragraph, NAMES3) is None
    four = "Answer: Alice is a knight, Bob is a knave, Carol is a knight, Dave is a knave"
    assert strict.read("knights:4", four) == "knight,knave,knight,knave"
    assert strict.read("knights", four) == RIGHT  # Dave is no one in a puzzle of three
    assert not READERS["paper"].applies("knights")
