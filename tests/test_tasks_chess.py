"""Chess tasks: generated positions, legal destinations, move legality, Stockfish scoring."""

from __future__ import annotations

from pathlib import Path

import chess
import pytest

from moot.errors import ConfigError
from moot.tasks import get_task
from moot.tasks.chess_tasks import ChessMoveTask, ChessValidityTask, parse_move
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
