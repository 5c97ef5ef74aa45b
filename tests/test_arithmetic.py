"""Du et al.'s arithmetic task: generation, rendering, gold values and scoring."""

from moot.tasks import get_task
from moot.tasks.arithmetic import HIGH, LOW, ArithmeticTask, gold_value


def test_gold_values_hand_checked() -> None:
    assert gold_value(10, 20, 23, 3, 11, 18) == 275  # Du et al.'s worked example
    assert gold_value(0, 0, 0, 0, 29, 29) == -841
    assert gold_value(29, 29, 29, 29, 0, 0) == 899


def test_questions_are_seeded_prefix_stable_and_in_range() -> None:
    task = ArithmeticTask()
    first = task.questions(50, seed=3)
    assert first == task.questions(50, seed=3)
    assert task.questions(5, seed=3) == first[:5]
    assert task.questions(5, seed=4) != first[:5]
    assert len({q.id for q in first}) == 50
    for q in first:
        terms = q.metadata["terms"]
        assert len(terms) == 6 and all(LOW <= t < HIGH for t in terms)
        a, b, c, d, e, f = terms
        assert q.prompt == f"{a}+{b}*{c}+{d}-{e}*{f}"
        assert int(q.gold) == a + b * c + d - e * f


def test_render_uses_du_wording_and_scoring_is_numeric() -> None:
    task = get_task("arithmetic")
    q = task.questions(1, seed=0)[0]
    assert task.render(q) == (
        f"What is the result of {q.prompt}? Make sure to state your answer at the end of the response."
    )
    assert task.score(q.gold, q)
    assert task.score(q.gold + ".0", q)
    assert not task.score(str(int(q.gold) + 1), q)


def test_free_question_uses_the_tasks_format_and_extractor_and_never_scores() -> None:
    from moot.tasks.free import FreeQuestionTask

    free = FreeQuestionTask(ArithmeticTask())
    q = free.question("What is 2+2?")
    assert free.render(q) == "What is 2+2? Make sure to state your answer at the end of the response."
    assert free.extract("It is 4.").answer == "4"
    assert not free.score("4", q)


def test_questions_by_id_regenerate_the_same_items() -> None:
    import pytest

    from moot.errors import ConfigError

    task = ArithmeticTask()
    items = task.questions(8, seed=5)
    assert task.by_ids([items[7].id, items[2].id]) == [items[7], items[2]]
    with pytest.raises(ConfigError, match="not an arithmetic question id"):
        task.by_ids(["gsm8k-3"])
