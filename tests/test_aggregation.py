"""Majority vote and its tie rules."""

from moot.debate.components.aggregation import majority_vote


def test_plurality_ignores_unparsed() -> None:
    vote = majority_vote(["3", None, "5", "5", None])
    assert vote.winner == "5"
    assert vote.counts == (("3", 1), ("5", 2))
    assert vote.tied == ("5",)
    assert vote.unparsed == 2


def test_tie_first_takes_earliest_agent_among_tied() -> None:
    assert majority_vote(["7", "3", "3", "7", "1"]).winner == "7"
    assert majority_vote(["1", "3", "7", "3", "7"]).winner == "3"  # "1" is not tied at the top


def test_tie_random_is_seeded_and_only_among_tied() -> None:
    answers = ["a", "b", "c", "a", "b", "c", "d"]
    winners = {majority_vote(answers, "random", seed=s).winner for s in range(200)}
    assert winners == {"a", "b", "c"}
    assert majority_vote(answers, "random", seed=11) == majority_vote(answers, "random", seed=11)


def test_tie_abstain_gives_no_answer_but_a_clear_winner_still_wins() -> None:
    tie = majority_vote(["1", "2"], "abstain")
    assert tie.winner is None and tie.tied == ("1", "2")
    assert majority_vote(["1", "2", "2"], "abstain").winner == "2"


def test_all_unparsed_has_no_winner() -> None:
    vote = majority_vote([None, None])
    assert vote.winner is None and vote.tied == () and vote.unparsed == 2
