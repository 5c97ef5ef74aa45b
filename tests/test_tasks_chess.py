"""Chess tasks: generated positions, legal destinations, move legality and normalisation (one
vote per move), Stockfish scoring and Du et al.'s pawn-score metric."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import chess
import pytest

from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec
from moot.debate.protocol_presets import resolve_protocol
from moot.errors import ConfigError
from moot.runner.evaluate import evaluate
from moot.tasks import MetricContext, ParseStatus, Question, TaskMetric, get_task
from moot.tasks.chess_tasks import ChessMoveTask, ChessValidityTask, canonical_move, parse_move
from moot.tasks.stockfish import MATE_CP, Stockfish, find_stockfish

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


def test_validity_questions_are_seeded_prefix_stable_and_correct() -> None:
    task = ChessValidityTask()
    first = task.questions(12, seed=5)
    assert task.questions(4, seed=5) == first[:4]
    assert task.questions(12, seed=6) != first
    assert task.by_ids([first[7].id, first[2].id]) == [first[7], first[2]]
    for q in first:
        board = chess.Board()
        for uci in q.metadata["moves"].split():
            board.push_uci(uci)  # every prefix move is legal
        assert board.fen() == q.metadata["fen"]
        square = chess.parse_square(q.metadata["square"])
        legal = sorted({chess.square_name(m.to_square) for m in board.legal_moves if m.from_square == square})
        assert q.gold.split(",") == legal and legal
        assert task.score(legal[-1], q) and not task.score("z9", q)
        assert board.piece_at(square).color == board.turn  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="not a chess-validity question id"):
        task.by_ids(["chess-move-s0-1"])


def test_validity_from_a_file() -> None:
    task = get_task("chess-validity", data=FIXTURES / "chess_validity.jsonl")
    ruy, italian = task.items()  # type: ignore[attr-defined]
    assert (ruy.id, ruy.gold) == ("chess-validity-ruy-lopez", "a5,a6")  # the a7 pawn after 3. Bb5
    assert italian.gold == "e7,f6,h6"  # the g8 knight after 3. Bc4 (SAN with move numbers)
    assert task.score("a6", ruy) and not task.score("a4", ruy)


def test_move_questions_are_move_fourteen_positions() -> None:
    task = ChessMoveTask()
    questions = task.questions(5, seed=0)
    assert task.questions(2, seed=0) == questions[:2]
    for q in questions:
        board = chess.Board(q.metadata["fen"])
        assert board.fullmove_number == 14 and board.turn == chess.WHITE and not board.is_game_over()
        assert q.metadata["side"] == "White"
        assert "Give a single move suggestion of the form 14. <XXX>" in task.render(q)
        assert q.prompt.startswith("Here is the current sequence of moves in a chess game: 1. ")


def test_parse_move_accepts_san_and_uci_and_refuses_illegal_moves() -> None:
    board = chess.Board()
    assert parse_move(board, "e4") == chess.Move.from_uci("e2e4")
    assert parse_move(board, "g1f3") == chess.Move.from_uci("g1f3")
    assert parse_move(board, "Nf3+") == chess.Move.from_uci("g1f3")  # python-chess ignores a wrong check mark
    assert parse_move(board, "e5") is None
    assert parse_move(board, "e2e5") is None
    assert parse_move(board, "Ke2") is None
    assert parse_move(board, "hello") is None


def test_stockfish_is_installed() -> None:
    assert Path(find_stockfish()).is_file()


def test_move_scoring_with_stockfish() -> None:
    task = get_task("chess-move:8", data=FIXTURES / "chess_move.jsonl")
    assert isinstance(task, ChessMoveTask)
    try:
        ruy, scholar = task.items()
        assert ruy.gold == "Ba4"
        # Scholar's mate threat: Qxf7 is mate, so it is the best move and gains a mate score
        mate = task.analyse("Qxf7#", scholar)
        assert mate.legal and mate.uci == "h5f7" and mate.after_cp == MATE_CP and mate.best_uci == "h5f7"
        assert mate.loss_pawns == 0 and task.score("Qxf7#", scholar) and task.score("h5f7", scholar)
        blunder = task.analyse("Qxh7", scholar)  # gives the queen away
        assert blunder.legal and blunder.delta_pawns is not None and blunder.delta_pawns < -5
        assert blunder.loss_pawns is not None and blunder.loss_pawns > 50 and not task.score("Qxh7", scholar)
        illegal = task.analyse("Qxf8", scholar)
        assert not illegal.legal and illegal.delta_pawns is None and not task.score("Qxf8", scholar)
        assert not task.score("e9", scholar)
        # a sound move in the Ruy Lopez keeps the evaluation close to the best move's
        retreat = task.analyse("Ba4", ruy)
        assert retreat.legal and retreat.loss_pawns is not None and retreat.loss_pawns < 1.0
        assert task.analyse("Ba4", ruy) is retreat  # cached
    finally:
        task.close()


def test_stockfish_is_deterministic_and_depth_is_configurable() -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3")
    first, second = Stockfish(depth=6), Stockfish(depth=6)
    try:
        move = chess.Move.from_uci("a7a6")
        assert first.analyse_move(board, "a6", move) == second.analyse_move(board, "a6", move)
        assert first.analyse_move(board, "a6", move) == first.analyse_move(board, "a6", move)
        assert first.analyse_move(board, "a6", move).depth == 6
    finally:
        first.close()
        second.close()
    with pytest.raises(ConfigError, match="depth must be positive"):
        Stockfish(depth=0)


def test_missing_stockfish_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOOT_STOCKFISH", str(tmp_path / "no-engine"))
    with pytest.raises(ConfigError, match="MOOT_STOCKFISH .* is not a file"):
        find_stockfish()


# --- one move, one vote: every legal way of writing a move reads as its UCI ----------------------

SCHOLAR = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"  # after 3... Nf6
CASTLE = "r1bqk2r/ppppbppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 6 5"
ROOKS = "4k3/8/8/8/8/8/8/R4RK1 w - - 0 1"  # Ra1 and Rf1 both reach b1..e1
MATE_OR_STALEMATE = "k7/3Q4/1K6/8/8/8/8/8 w - - 0 1"  # Qd8# / Qb7# mate; Qc7 stalemates


def _question(fen: str) -> Question:
    board = chess.Board(fen)
    side = "White" if board.turn else "Black"
    return Question(
        id="chess-move-test",
        prompt="",
        gold="",
        metadata={"fen": fen, "move_number": board.fullmove_number, "side": side},
    )


@pytest.mark.parametrize(
    ("fen", "replies", "uci"),
    [
        (
            chess.STARTING_FEN,
            ["1. Nf3", "{final answer: g1f3}", "My move is Nf3+", "Nxf3", "1. Ng1-f3", "Ng1f3"],
            "g1f3",
        ),
        (chess.STARTING_FEN, ["1. e4", "e2e4", "1. e2-e4", "The best move is e4!"], "e2e4"),
        (SCHOLAR, ["4. Qxf7#", "Qxf7", "Qf7", "4. Qf7+", "h5f7", "4. Qh5xf7#"], "h5f7"),
        (CASTLE, ["5. O-O", "5. 0-0", "e1g1", "e1h1", "My move is O-O+"], "e1g1"),
    ],
)
def test_every_way_of_writing_a_move_reads_as_one_uci(fen: str, replies: list[str], uci: str) -> None:
    task, question = ChessMoveTask(), _question(fen)
    for reply in replies:
        extraction = task.read_reply(reply, question)
        assert (extraction.answer, extraction.status) == (uci, ParseStatus.PARSED), reply
        assert task.read_answer(reply, question).answer == uci  # a judge's or moderator's field too
    assert canonical_move(chess.Board(fen), replies[0].split()[-1]) == uci


@pytest.mark.parametrize(
    ("fen", "reply"),
    [
        (chess.STARTING_FEN, "1. e5"),  # not White's move
        (chess.STARTING_FEN, "1. Ke2"),  # blocked
        (chess.STARTING_FEN, "e2e5"),
        (chess.STARTING_FEN, "I would develop a knight."),  # no move at all
        (CASTLE, "5. O-O-O"),  # queenside castling is not legal here
        (ROOKS, "1. Rd1"),  # ambiguous: SAN that names no single move
    ],
)
def test_an_illegal_or_unreadable_move_is_unparsed(fen: str, reply: str) -> None:
    extraction = ChessMoveTask().read_reply(reply, _question(fen))
    assert (extraction.answer, extraction.status) == (None, ParseStatus.UNPARSED)


def test_disambiguated_forms_are_one_move_and_extract_alone_keeps_the_writing() -> None:
    task, rooks = ChessMoveTask(), _question(ROOKS)
    assert {task.read_reply(r, rooks).answer for r in ("1. Rad1", "Rad1+", "a1d1", "1. Ra1-d1")} == {"a1d1"}
    assert task.extract("1. Nf3").answer == "Nf3"  # without a position the move stays as written
    assert task.read_reply("1. Nf3", Question(id="own", prompt="", gold="")).answer == "Nf3"  # nor with none


def test_the_vote_counts_every_spelling_of_one_move_together(monkeypatch: pytest.MonkeyPatch) -> None:
    task = ChessMoveTask()
    monkeypatch.setattr(task, "score", lambda answer, question: False)  # no engine needed for the vote
    replies = ["1. Nf3", "1. g1f3", "1. Nf3+", "1. e4"]
    agents = [
        Agent(AgentSpec(name=f"agent-{i}", backend=ScriptedBackendConfig()), ScriptedBackend([r]))
        for i, r in enumerate(replies, 1)
    ]
    protocol = resolve_protocol("vote", agents=4)
    (result,) = asyncio.run(evaluate(task, protocol, agents, [_question(chess.STARTING_FEN)])).results
    assert result.final_answer == "g1f3"
    assert dict(result.rounds[0].vote.counts) == {"g1f3": 3, "e2e4": 1}


# --- Du et al.'s metric: the pawn-score change of the chosen move (Stockfish) --------------------

needs_stockfish = pytest.mark.skipif(
    not Path("/usr/games/stockfish").is_file()
    and shutil.which("stockfish") is None
    and "MOOT_STOCKFISH" not in os.environ,
    reason="Stockfish is not installed",
)


async def _metric(task: ChessMoveTask, fen: str, reply: str) -> TaskMetric | None:
    agents = [Agent(AgentSpec(name="agent-1", backend=ScriptedBackendConfig()), ScriptedBackend([reply]))]
    (result,) = (await evaluate(task, resolve_protocol("single"), agents, [_question(fen)])).results
    return await task.metric(result, MetricContext(agents[0].backend, Caller(), "judge", 0))


@needs_stockfish
async def test_metric_is_the_pawn_score_change_of_the_chosen_move() -> None:
    task = ChessMoveTask(depth=8)
    try:
        # before: White mates in 1, Stockfish's Mate(+1) = 10000 - 1 = 9999 cp for the mover
        mate = await _metric(task, MATE_OR_STALEMATE, "1. Qd8#")
        assert mate is not None
        assert mate.detail["before_cp"] == 9999 and mate.detail["after_cp"] == MATE_CP  # checkmate: exactly 10000
        assert mate.value == pytest.approx((10000 - 9999) / 100) == 0.01
        assert mate.detail["loss_pawns"] == 0 and mate.detail["move"] == "d7d8" and mate.detail["san"] == "Qd8#"
        # the stalemating move: after is a draw, exactly 0; the best move mates (10000)
        stalemate = await _metric(task, MATE_OR_STALEMATE, "Qc7")
        assert stalemate is not None and stalemate.detail["after_cp"] == 0
        assert stalemate.value == pytest.approx((0 - 9999) / 100) == -99.99
        assert stalemate.detail["loss_pawns"] == pytest.approx(100.0) and stalemate.detail["depth"] == 8
        assert stalemate.detail["best_cp"] == MATE_CP
    finally:
        task.close()


async def test_metric_without_a_legal_final_move_is_none_and_says_why() -> None:
    task = ChessMoveTask()
    metric = await _metric(task, chess.STARTING_FEN, "1. e5")  # illegal: unparsed, so no final move
    assert metric is not None and metric.value is None
    assert metric.detail == {"move": None, "legal": False, "reason": "no final move (unparsed)"}
