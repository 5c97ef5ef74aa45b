"""Stockfish through python-chess: evaluations of a proposed move, in pawns, at a fixed depth.

The engine is Debian's ``stockfish`` package (15.1 on bookworm, /usr/games/stockfish), or
the program named by $MOOT_STOCKFISH. It runs with one thread and a hash cleared before
every search, so a given version and depth give the same numbers on every run. Depth 12
takes about 0.1 s a position on a laptop core; depth 20 several seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from moot.errors import ConfigError

if TYPE_CHECKING:
    import chess
    import chess.engine

DEFAULT_DEPTH = 12
MATE_CP = 10_000  # a forced mate counts as this many centipawns (less the moves to it)
_DEBIAN = "/usr/games/stockfish"


def find_stockfish() -> str:
    """$MOOT_STOCKFISH, else `stockfish` on PATH, else Debian's /usr/games/stockfish."""
    if env := os.environ.get("MOOT_STOCKFISH"):
        if not Path(env).is_file():
            raise ConfigError(f"MOOT_STOCKFISH is {env!r}, which is not a file")
        return env
    found = shutil.which("stockfish") or (_DEBIAN if Path(_DEBIAN).is_file() else None)
    if found is None:
        raise ConfigError("chess-move scoring needs Stockfish: apt-get install stockfish (or set MOOT_STOCKFISH)")
    return found


@dataclass(frozen=True)
class MoveAnalysis:
    """Stockfish's view of one proposed move, from the mover's side, in centipawns.

    ``delta_pawns`` is the evaluation change the move brings (after - before);
    ``loss_pawns`` how much worse it is than the engine's best move (best - after, >= 0
    up to search noise). An illegal or unreadable move has ``legal`` False and no numbers.
    """

    answer: str
    legal: bool
    depth: int
    uci: str | None = None
    san: str | None = None
    before_cp: int | None = None
    after_cp: int | None = None
    best_uci: str | None = None
    best_cp: int | None = None

    @property
    def delta_pawns(self) -> float | None:
        if self.after_cp is None or self.before_cp is None:
            return None
        return (self.after_cp - self.before_cp) / 100

    @property
    def loss_pawns(self) -> float | None:
        if self.after_cp is None or self.best_cp is None:
            return None
        return (self.best_cp - self.after_cp) / 100


class Stockfish:
    """A lazily started engine process; thread-safe; closed at exit or by ``close``."""

    def __init__(self, depth: int = DEFAULT_DEPTH, path: str | None = None) -> None:
        if depth < 1:
            raise ConfigError(f"the Stockfish depth must be positive, got {depth}")
        self.depth = depth
        self._path = path
        self._engine: chess.engine.SimpleEngine | None = None
        self._lock = threading.Lock()

    def _open(self) -> chess.engine.SimpleEngine:
        import chess.engine

        if self._engine is None:
            path = self._path or find_stockfish()
            try:
                self._engine = chess.engine.SimpleEngine.popen_uci(path)
            except (OSError, chess.engine.EngineError) as exc:
                raise ConfigError(f"could not start Stockfish ({path}): {exc}") from None
            self._engine.configure({"Threads": 1, "Hash": 16})
            atexit.register(self.close)
        return self._engine

    def evaluate(self, board: chess.Board) -> tuple[int, chess.Move | None]:
        """(centipawns for the side to move, best move) at ``depth``; game-over positions are scored exactly."""
        import chess
        import chess.engine

        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            if outcome.winner is None:
                return 0, None
            return (MATE_CP if outcome.winner == board.turn else -MATE_CP), None
        with self._lock:
            engine = self._open()
            # a new game object each search: python-chess sends ucinewgame, which clears the hash
            info = engine.analyse(board, chess.engine.Limit(depth=self.depth), game=object())
        score = info["score"].pov(board.turn).score(mate_score=MATE_CP)
        assert score is not None
        pv = info.get("pv")
        return score, pv[0] if pv else None

    def after(self, board: chess.Board, move: chess.Move) -> int:
        """Centipawns for the mover after ``move``."""
        board = board.copy(stack=False)
        board.push(move)
        cp, _ = self.evaluate(board)
        return -cp

    def analyse_move(self, board: chess.Board, answer: str, move: chess.Move | None) -> MoveAnalysis:
        if move is None:
            return MoveAnalysis(answer=answer, legal=False, depth=self.depth)
        before, best = self.evaluate(board)
        if best is None:  # cannot happen when a legal move exists; keep the types honest
            best = move
        return MoveAnalysis(
            answer=answer,
            legal=True,
            depth=self.depth,
            uci=move.uci(),
            san=board.san(move),
            before_cp=before,
            after_cp=self.after(board, move),
            best_uci=best.uci(),
            best_cp=self.after(board, best),
        )

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                with contextlib.suppress(Exception):  # the process may already be gone at exit
                    self._engine.quit()
                self._engine = None
