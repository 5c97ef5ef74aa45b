"""Chess tasks of Du et al. 2024, generated with python-chess (PyPI ``chess``, GPL-3.0).

``chess-validity`` (after BIG-bench's chess_state_tracking, Apache-2.0): a random legal
game prefix in UCI notation and the square of a piece of the side to move that has a
legal move; any legal destination square of that piece is correct.

``chess-move``: a game prefix (26 random legal plies, so White plays move 14, as in Du et
al.'s move-14 positions) in numbered SAN; the answer is the next move in any notation (SAN,
UCI, long algebraic, with or without check and capture marks). Reading a reply in its
position (``read_reply``) turns it into the move's UCI, so every way of writing one move is
one vote; an illegal or unreadable move is unparsed. A legal move is judged by Stockfish
(see moot.tasks.stockfish): the task metric is Du et al.'s pawn-score change of the chosen
(final) move, after - before from the mover's side, in pawns; ``score`` is True when the
move is legal and loses at most ``margin_pawns`` against the engine's best move. Du et al.'s
chess code is not in their release; the metric follows the paper ("pawn score advantage").
Du et al. used positions from master games; any such collection loads as a local file
of rows {"moves": "1. e4 e5 2. Nf3 ...", "next": "Nc6" (optional), "id" (optional)}.

Questions are generated per (seed, index) by a ``random.Random`` seeded from both, so the
first k are the same for any count >= k. Random play gives unusual but legal positions.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from moot.errors import ConfigError
from moot.limits import MAX_GENERATED_QUESTIONS, MAX_STOCKFISH_DEPTH, check_at_most
from moot.seeds import derive_seed
from moot.tasks.base import DataSource, Extraction, MetricContext, Question, TaskBase, TaskMetric
from moot.tasks.data import FILE_SPLIT, Row, check_split, file_sha256, read_records, select
from moot.tasks.registry import PARAMETRISED, TASKS
from moot.tasks.stockfish import DEFAULT_DEPTH, MoveAnalysis, Stockfish

if TYPE_CHECKING:
    import chess

    from moot.debate.records import DebateResult

GENERATED = "generated"

# --- reading moves from replies -----------------------------------------------------------

_SAN = (
    r"(?:O-O-O|O-O|0-0-0|0-0|[KQRBN][a-h]?[1-8]?[x-]?[a-h][1-8]"
    r"|[a-h][1-8][x-][a-h][1-8](?:=?[QRBNqrbn])?|[a-h](?:x[a-h])?[1-8](?:=?[QRBNqrbn])?)[+#]?"
)
_UCI = r"[a-h][1-8][a-h][1-8][qrbn]?"
_MOVE = rf"(?P<move>{_UCI}|{_SAN})(?![\w=])"
_WRAP = r"[<*_`\"'\s]*"
_FINAL_MOVE = re.compile(rf"\{{\s*(?i:final\s+answer)\s*:{_WRAP}{_MOVE}")
_NUMBERED_MOVE = re.compile(rf"(?<!\d)\d{{1,3}}\s*\.(?:\s*\.\.)?{_WRAP}{_MOVE}")
_STATED_MOVE = re.compile(rf"(?i:move|answer|play)(?:\s+(?i:is|would\s+be|should\s+be))?\s*[:\-]?{_WRAP}{_MOVE}")
_ONLY_MOVE = re.compile(rf"^{_WRAP}{_MOVE}{_WRAP}[.!]?{_WRAP}$")
_SQUARE = re.compile(r"(?<![A-Za-z0-9])([a-h][1-8])(?![A-Za-z0-9])")
_SQUARE_LINE = re.compile(r"^[\s*_`\"'.:>-]*(?:(?i:final\s+answer)\s*:?[\s*_`\"']*)?([a-h][1-8])[\s*_`\"'.]*$", re.M)


def _normalise_move(move: str) -> str:
    return move.replace("0-0-0", "O-O-O").replace("0-0", "O-O")


def extract_move(text: str) -> str | None:
    """The proposed move: the last "{final answer: M}", else the last numbered move ("14. Nf3",
    "14... Nf6"), else the last "move is M" / "answer: M" / "play M", else a reply that is only
    a move. SAN or UCI as written (castling with zeros becomes O-O); None when there is none."""
    for pattern in (_FINAL_MOVE, _NUMBERED_MOVE, _STATED_MOVE, _ONLY_MOVE):
        matches = list(pattern.finditer(text.strip()))
        if matches:
            return _normalise_move(matches[-1].group("move"))
    return None


def extract_square(text: str) -> str | None:
    """The answered square: the last line that is only a square (Du et al. ask for one on its
    own line), else the last square mentioned; None when there is none."""
    lines = _SQUARE_LINE.findall(text)
    if lines:
        return lines[-1]
    squares = _SQUARE.findall(text)
    return squares[-1] if squares else None


def parse_move(board: chess.Board, text: str) -> chess.Move | None:
    """A legal move of ``board`` in any notation python-chess reads: SAN with or without check,
    mate and capture marks ("Nf3", "Nf3+", "Nxf3"), long algebraic ("Ng1-f3", "e2-e4"), castling
    with O or 0, or UCI ("g1f3", "e1h1" for castling). None when illegal or unreadable."""
    text = _normalise_move(text.strip())
    try:
        return board.parse_san(text)
    except ValueError:
        pass
    try:
        return board.parse_uci(text.lower())
    except ValueError:
        return None


def canonical_move(board: chess.Board, text: str) -> str | None:
    """The UCI of the legal move ``text`` names in ``board`` (one form for every way of writing
    it), or None when it names no legal move."""
    move = parse_move(board, text)
    return move.uci() if move is not None else None


# --- positions ----------------------------------------------------------------------------


def random_game(rng: random.Random, plies: int) -> chess.Board | None:
    """A game of ``plies`` uniformly random legal moves, or None if it ends sooner."""
    import chess

    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            return None
        board.push(rng.choice(moves))
    return None if board.is_game_over(claim_draw=False) else board


_NUMBER = re.compile(r"^\d+\.+$|^\d+\.\.\.$")
_RESULT = ("1-0", "0-1", "1/2-1/2", "*")


def play_moves(row: Row, field: str = "moves") -> chess.Board:
    """The position after a row's moves: SAN or UCI, move numbers ("1." or "1...") allowed."""
    import chess

    board = chess.Board()
    tokens = row.text(field).replace(".", ". ").split()
    count = 0
    for token in tokens:
        if _NUMBER.match(token) or token in _RESULT:
            continue
        count += 1
        move = parse_move(board, _normalise_move(token))
        if move is None:
            raise row.error(field, f"has move {count} {token!r}, which is not legal in its position")
        board.push(move)
    return board


def numbered_san(board: chess.Board) -> str:
    """'1. e4 e5 2. Nf3 ...' for the game that led to ``board``."""
    import chess

    return chess.Board().variation_san(board.move_stack)


# --- the tasks ----------------------------------------------------------------------------


class _ChessTask(TaskBase):
    """Questions generated from (seed, index), or read from a local file of move lists."""

    name: str
    answer_instruction: str
    system_prompt: str | None = None
    source_url = "https://python-chess.readthedocs.io"
    version = "chess==1.11.2"

    def __init__(self, *, source: DataSource | None = None) -> None:
        self.source = source or DataSource("offline")
        self._file_items: list[Question] | None = None

    @property
    def splits(self) -> tuple[str, ...]:
        return (FILE_SPLIT,) if self.source.kind == "file" else (GENERATED,)

    def with_source(self, source: DataSource) -> Self:
        """The same task generating its questions, or reading them from a local file (read and checked now)."""
        if source.kind == "hub":
            raise ConfigError(f"task {self.name} is generated; it has no Hugging Face hub dataset")
        import copy

        task = copy.copy(self)
        task.source = source
        task._file_items = None
        if source.kind == "file":
            task.items()
        return task

    def provenance(self) -> dict[str, Any]:
        kind = "file" if self.source.kind == "file" else GENERATED
        record: dict[str, Any] = {"task": self.name, "source": kind, "licence": self.licence, "version": self.version}
        if self.source.kind == "file" and self.source.path:
            record["file"] = self.source.path
            record["sha256"] = file_sha256(Path(self.source.path))
        return record

    def generate(self, seed: int, index: int) -> Question:
        raise NotImplementedError

    def parse(self, row: Row, index: int) -> Question:
        raise NotImplementedError

    def _check_split(self, split: str | None) -> str:
        return check_split(self.name, self.splits, split)

    def items(self, split: str | None = None) -> list[Question]:
        """The questions of the local file (generated tasks have no fixed list)."""
        self._check_split(split)
        if self.source.kind != "file" or self.source.path is None:
            raise ConfigError(f"task {self.name} generates its questions; it has no fixed list")
        if self._file_items is None:
            found: list[Question] = []
            seen: dict[str, int] = {}
            rows: Iterable[Row] = read_records(Path(self.source.path))
            for index, row in enumerate(rows):
                question = self.parse(row, index)
                if question.id in seen:
                    raise ConfigError(
                        f"{row.file}: row {row.number}: duplicate question id {question.id!r} (first in row {seen[question.id]})"
                    )
                seen[question.id] = row.number
                found.append(question)
            if not found:
                raise ConfigError(f"{self.source.path}: no questions for task {self.name}")
            self._file_items = found
        return self._file_items

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions: generated from (seed, index), or a seeded selection of the file's."""
        self._check_split(split)
        if self.source.kind == "file":
            return select(self.items(), count, seed, f"task {self.name} (file {self.source.path})")
        if count < 1:
            raise ConfigError(f"the question count must be positive, got {count}")
        check_at_most(count, MAX_GENERATED_QUESTIONS, f"the question count of generated task {self.name}")
        return [self.generate(seed, i) for i in range(count)]

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        self._check_split(split)
        if self.source.kind == "file":
            index = {q.id: q for q in self.items()}
            missing = [qid for qid in ids if qid not in index]
            if missing:
                raise ConfigError(f"task {self.name} has no question {missing[0]!r} in file {self.source.path}")
            return [index[qid] for qid in ids]
        pattern = re.compile(rf"{re.escape(self.id_prefix)}-s(-?\d+)-(\d+)")
        found = []
        for qid in ids:
            match = pattern.fullmatch(qid)
            if match is None or len(match.group(1)) > 20:
                raise ConfigError(f"{qid[:100]!r} is not a {self.name} question id ({self.id_prefix}-s<seed>-<index>)")
            digits = match.group(2).lstrip("0") or "0"
            if len(digits) > 9 or int(digits) >= MAX_GENERATED_QUESTIONS:
                raise ConfigError(
                    f"question {qid[:100]!r}: the index of a generated question is below {MAX_GENERATED_QUESTIONS:,}"
                )
            found.append(self.generate(int(match.group(1)), int(digits)))
        return found

    @property
    def id_prefix(self) -> str:
        return self.name.split(":")[0]

    def _row_id(self, row: Row, index: int) -> str:
        if row.has("id"):
            value = row.get("id")
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise row.error("id", f"must be a string or an integer, got {type(value).__name__}")
            return f"{self.id_prefix}-{value}"
        return f"{self.id_prefix}-file-{index}"


class ChessValidityTask(_ChessTask):
    """Name a legal destination square for a given piece after a random legal game prefix."""

    name = "chess-validity"
    description = "name a legal destination square of a piece after a random legal game prefix"
    metric_description = "accuracy (any legal destination square)"
    answer_instruction = "State your final answer in a newline with a 2 letter response following the regex [a-h][1-8]."
    min_plies, max_plies = 4, 40

    def _question(self, qid: str, board: chess.Board, square: int) -> Question:
        import chess

        destinations = sorted({chess.square_name(m.to_square) for m in board.legal_moves if m.from_square == square})
        moves = " ".join(m.uci() for m in board.move_stack)
        name = chess.square_name(square)
        piece = board.piece_at(square)
        assert piece is not None
        prompt = (
            f'Given the chess game "{moves}", give one valid destination square for the chess piece at "{name}". '
            "Give a one line explanation of why your destination square is a valid move."
        )
        return Question(
            id=qid,
            prompt=prompt,
            gold=",".join(destinations),
            metadata={
                "moves": moves,
                "square": name,
                "piece": piece.symbol(),
                "fen": board.fen(),
                "destinations": destinations,
            },
        )

    def generate(self, seed: int, index: int) -> Question:
        rng = random.Random(derive_seed("chess-validity", seed, index))
        board = None
        while board is None:
            board = random_game(rng, rng.randrange(self.min_plies, self.max_plies))
        square = rng.choice(sorted({m.from_square for m in board.legal_moves}))
        return self._question(f"chess-validity-s{seed}-{index}", board, square)

    def parse(self, row: Row, index: int) -> Question:
        import chess

        board = play_moves(row)
        name = row.text("square").strip().lower()
        if name not in chess.SQUARE_NAMES:
            raise row.error("square", f"is {name!r}, not a square")
        square = chess.parse_square(name)
        if not any(m.from_square == square for m in board.legal_moves):
            raise row.error("square", f"holds no piece of the side to move with a legal move ({name})")
        return self._question(self._row_id(row, index), board, square)

    def render(self, question: Question) -> str:
        return f"{question.prompt} {self.answer_instruction}"

    def extract(self, text: str) -> Extraction:
        return Extraction.of(extract_square(text))

    def score(self, answer: str, question: Question) -> bool:
        return answer.strip().lower() in question.gold.split(",")


class ChessMoveTask(_ChessTask):
    """Propose the next move after a game prefix; scored by Stockfish at ``depth``."""

    description = "propose the next move after a 26-ply random game prefix, judged by Stockfish"
    answer_instruction = (
        "Give a single move suggestion of the form <move number>. <move> in standard algebraic notation, "
        "and make sure the chess move is valid in the current board state."
    )
    plies = 26

    def __init__(
        self, depth: int = DEFAULT_DEPTH, margin_pawns: float = 0.5, *, source: DataSource | None = None
    ) -> None:
        super().__init__(source=source)
        if margin_pawns < 0:
            raise ConfigError(f"the chess-move margin must be >= 0 pawns, got {margin_pawns}")
        self.depth = depth
        self.margin_pawns = margin_pawns
        self.name = "chess-move" if depth == DEFAULT_DEPTH else f"chess-move:{depth}"
        self.metric_description = (
            f"pawn-score change of the chosen move (Du et al.; Stockfish depth {depth}); "
            f"accuracy = legal and loss <= {margin_pawns} pawns"
        )
        self.engine = Stockfish(depth)
        self._analyses: dict[tuple[str, str], MoveAnalysis] = {}

    def _question(self, qid: str, board: chess.Board, next_move: str = "") -> Question:
        number = board.fullmove_number
        side = "White" if board.turn else "Black"
        prompt = (
            f"Here is the current sequence of moves in a chess game: {numbered_san(board)}. "
            f"It is {side}'s turn. What is the best chess move I should execute next?"
        )
        return Question(
            id=qid,
            prompt=prompt,
            gold=next_move,
            metadata={
                "fen": board.fen(),
                "moves": " ".join(m.uci() for m in board.move_stack),
                "move_number": number,
                "side": side,
            },
        )

    def generate(self, seed: int, index: int) -> Question:
        rng = random.Random(derive_seed("chess-move", seed, index))
        board = None
        while board is None:
            board = random_game(rng, self.plies)
        return self._question(f"chess-move-s{seed}-{index}", board)

    def parse(self, row: Row, index: int) -> Question:
        board = play_moves(row)
        if board.is_game_over(claim_draw=False):
            raise row.error("moves", "ends the game; there is no next move")
        next_move = ""
        if row.has("next"):
            move = parse_move(board, _normalise_move(row.text("next")))
            if move is None:
                raise row.error("next", f"is {row.get('next')!r}, not a legal move in the position")
            next_move = board.san(move)
        return self._question(self._row_id(row, index), board, next_move)

    def render(self, question: Question) -> str:
        number = question.metadata["move_number"]
        dots = "." if question.metadata["side"] == "White" else "..."
        return (
            f"{question.prompt} Give a single move suggestion of the form {number}{dots} <XXX> "
            "and make sure the chess move is valid in the current board state."
        )

    def extract(self, text: str) -> Extraction:
        """The move as written (no position here: ``read_reply`` reads it in its position)."""
        return Extraction.of(extract_move(text))

    def read_reply(self, text: str, question: Question) -> Extraction:
        """The proposed move as UCI in the question's position, so that "Nf3", "Nf3+", "Nxf3"
        (where legal) and "g1f3" are one vote; unparsed when the move is illegal or unreadable.
        A question without a position (one's own question) is read as ``extract`` reads it."""
        import chess

        move = extract_move(text)
        if move is None or "fen" not in question.metadata:
            return Extraction.of(move)
        return Extraction.of(canonical_move(chess.Board(question.metadata["fen"]), move))

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        """Du et al.'s chess-move metric: the pawn-score change of the chosen (final) move, Stockfish's
        evaluation after it minus before it, from the mover's side, in pawns. None when there is no
        legal final move (the detail says why) or the question has no position.

        ``detail``: the move (UCI and SAN), its legality, the evaluations in centipawns (before,
        after, and after the engine's best move), the change and the loss against the best move in
        pawns, and the search depth. The engine runs in a thread, off the event loop.
        """
        question = result.question
        if "fen" not in question.metadata:
            return None
        answer = result.final_answer
        if answer is None:
            return TaskMetric(None, {"move": None, "legal": False, "reason": f"no final move ({result.status})"})
        analysis = await asyncio.to_thread(self.analyse, answer, question)
        detail: dict[str, Any] = {
            "move": analysis.uci,
            "san": analysis.san,
            "answer": answer,
            "legal": analysis.legal,
            "before_cp": analysis.before_cp,
            "after_cp": analysis.after_cp,
            "best_uci": analysis.best_uci,
            "best_cp": analysis.best_cp,
            "delta_pawns": analysis.delta_pawns,
            "loss_pawns": analysis.loss_pawns,
            "depth": analysis.depth,
        }
        if not analysis.legal:
            detail["reason"] = "the final move is not legal in the position"
        return TaskMetric(analysis.delta_pawns, detail)

    def analyse(self, answer: str, question: Question) -> MoveAnalysis:
        """Legality, and for a legal move Stockfish's evaluations (cached per position and answer)."""
        import chess

        key = (question.metadata["fen"], answer)
        if key not in self._analyses:
            board = chess.Board(question.metadata["fen"])
            self._analyses[key] = self.engine.analyse_move(board, answer, parse_move(board, answer))
        return self._analyses[key]

    def is_legal(self, answer: str, question: Question) -> bool:
        import chess

        return parse_move(chess.Board(question.metadata["fen"]), answer) is not None

    def score(self, answer: str, question: Question) -> bool:
        """True when the move is legal and at most ``margin_pawns`` worse than Stockfish's best."""
        if not self.is_legal(answer, question):
            return False
        loss = self.analyse(answer, question).loss_pawns
        return loss is not None and loss <= self.margin_pawns

    def close(self) -> None:
        self.engine.close()


TASKS.register("chess-validity", ChessValidityTask)
TASKS.register("chess-move", ChessMoveTask)


def _depth(argument: str) -> ChessMoveTask:
    """``chess-move:<depth>``: the Stockfish depth that finds the best move."""
    if not (argument.isascii() and argument.isdigit()) or not argument.strip("0"):
        raise ConfigError(f"chess-move:<depth> needs a positive integer depth, got {argument[:40]!r}")
    if len(argument.lstrip("0")) > 6 or int(argument) > MAX_STOCKFISH_DEPTH:
        raise ConfigError(
            f"chess-move:<depth>: the Stockfish depth is at most {MAX_STOCKFISH_DEPTH}, got {argument[:40]}"
        )
    return ChessMoveTask(depth=int(argument))


PARAMETRISED.register("chess-move", _depth)
