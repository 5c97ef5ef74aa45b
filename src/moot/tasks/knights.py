"""Knights and knaves: who is a knight and who is a knave, from what each person says.

Smullyan's logic puzzles (What Is the Name of This Book?, 1978), lately a task of debate studies (Wu et
al., arXiv 2511.07784). Knights always tell the truth and knaves always lie, so person i's statement is
true exactly when person i is a knight. Like arithmetic, the task is generated from the seed: no data.

Each question draws a secret assignment of roles, then one statement per person that is true for a
knight and false for a knave under it (``KINDS``: "X is a knight", "X and Y are both knaves", "If X is a
knight then Y is a knave", "X and Y are the same kind", ...); a brute-force solver over all 2^n
assignments (``solutions``) keeps the puzzle only when that assignment is the one consistent with every
statement, else the draw is repeated (at most ``MAX_TRIES`` times, deterministically from the seed).

The people are the first n of ``NAMES``, always in that order. The gold is the roles in that order,
comma-separated without spaces: "knight,knave,knight" (``canonical_roles``). A reply is asked to end with
"Answer: Alice is a [knight/knave], Bob is a [knight/knave], ..." (placeholders, not example roles, so that
no assignment is suggested) and is read by ``read_roles``; with Choi et al.'s templates it is asked for
"{final answer: ...}" with the roles in order (``read_final_answer``). The system prompt is moot's.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations, product

from moot.errors import ConfigError
from moot.limits import MAX_GENERATED_QUESTIONS, check_at_most
from moot.seeds import derive_seed
from moot.tasks.base import Extraction, Question, TaskBase
from moot.tasks.registry import PARAMETRISED, TASKS
from moot.tasks.wording import ChoiWording

NAMES = ("Alice", "Bob", "Carol", "Dave", "Eve", "Frank", "Grace", "Henry")
MIN_PEOPLE, MAX_PEOPLE = 2, len(NAMES)  # one person alone has no puzzle with exactly one solution
DEFAULT_PEOPLE = 3
MAX_TRIES = 1_000  # draws of one question before its generation is refused (about 3 are needed on average)
KNIGHT, KNAVE = "knight", "knave"

# a statement's kind -> how many people it is about
KINDS: dict[str, int] = {
    "knight": 1,  # X is a knight
    "knave": 1,  # X is a knave
    "both-knights": 2,  # X and Y are both knights
    "both-knaves": 2,  # X and Y are both knaves
    "knight-or-knave": 2,  # X is a knight or Y is a knave (inclusive)
    "if-knight-then-knave": 2,  # if X is a knight then Y is a knave (material implication)
    "same": 2,  # X and Y are the same kind (equivalence)
    "different": 2,  # X and Y are different kinds (exclusive or)
}

STEP_BY_STEP = (
    "You are a careful logician. Reason about each person in turn: suppose they are a knight, then suppose "
    "they are a knave, and follow what their statement implies. Check every statement against your candidate "
    "assignment: a knight's statement must be true and a knave's false. End your response by stating every "
    "person's role in the form the question asks for."
)

_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


@dataclass(frozen=True)
class Statement:
    """What one person says: a ``KINDS`` kind about one or two people (indices; the speaker may be one)."""

    kind: str
    about: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown statement kind {self.kind!r}; known: {', '.join(KINDS)}")
        if len(self.about) != KINDS[self.kind] or len(set(self.about)) != len(self.about):
            raise ValueError(f"a {self.kind!r} statement is about {KINDS[self.kind]} distinct people, got {self.about}")

    def holds(self, knights: Sequence[bool]) -> bool:
        """Whether the statement is true when ``knights[i]`` says whether person i is a knight."""
        x = knights[self.about[0]]
        y = knights[self.about[-1]]
        match self.kind:
            case "knight":
                return x
            case "knave":
                return not x
            case "both-knights":
                return x and y
            case "both-knaves":
                return not x and not y
            case "knight-or-knave":
                return x or not y
            case "if-knight-then-knave":
                return not x or not y
            case "same":
                return x == y
            case _:  # "different"
                return x != y


def solutions(statements: Sequence[Statement], n: int) -> list[tuple[bool, ...]]:
    """Every assignment of n people (True: knight) in which each person's statement (person i says
    ``statements[i]``) is true exactly when they are a knight, in the order of
    ``itertools.product((True, False), repeat=n)``: all knights first."""
    if len(statements) != n:
        raise ValueError(f"{n} people make {n} statements, got {len(statements)}")
    if any(p < 0 or p >= n for s in statements for p in s.about):
        raise ValueError(f"a statement is about someone who is not one of the {n} people")
    return [
        knights
        for knights in product((True, False), repeat=n)
        if all(s.holds(knights) == knights[i] for i, s in enumerate(statements))
    ]


def _statements_by_truth(knights: tuple[bool, ...]) -> dict[bool, dict[str, list[Statement]]]:
    """Every statement about these people, by whether it is true under ``knights``, then by kind."""
    table: dict[bool, dict[str, list[Statement]]] = {True: {}, False: {}}
    for kind, arity in KINDS.items():
        for about in permutations(range(len(knights)), arity):
            statement = Statement(kind, about)
            table[statement.holds(knights)].setdefault(kind, []).append(statement)
    return table


def draw_puzzle(rng: random.Random, people: int, tries: int = MAX_TRIES) -> tuple[list[Statement], tuple[bool, ...]]:
    """A puzzle of ``people`` people with exactly one solution, and that solution: a random assignment and
    statements true to it, drawn again until no other assignment fits; a ConfigError after ``tries`` draws
    (a size with no such puzzle, such as one person, always ends there)."""
    for _ in range(tries):
        knights = tuple(rng.random() < 0.5 for _ in range(people))
        table = _statements_by_truth(knights)
        statements = []
        for i in range(people):
            # a knight's statement is true, a knave's false: a kind drawn among those with one, then one of them
            # ("I am a knight" is always one, so every speaker has a statement)
            fitting = table[knights[i]]
            statements.append(rng.choice(fitting[rng.choice(list(fitting))]))
        if solutions(statements, people) == [knights]:
            return statements, knights
    raise ConfigError(f"knights: no puzzle of {people} people with exactly one solution in {tries:,} draws")


# -- wording -------------------------------------------------------------------------------------------
def listing(names: Sequence[str]) -> str:
    """ "Alice, Bob and Carol"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def statement_text(statement: Statement, speaker: int, names: Sequence[str]) -> str:
    """What the speaker says, in words: "Bob is a knave.", "Alice and I are both knaves.", "If I am a knight
    then Carol is a knave."."""

    def clause(person: int, role: str) -> str:
        return f"I am a {role}" if person == speaker else f"{names[person]} is a {role}"

    def pair() -> str:
        x, y = statement.about
        if speaker in (x, y):
            return f"{names[y if x == speaker else x]} and I"
        return f"{names[x]} and {names[y]}"

    x = statement.about[0]
    match statement.kind:
        case "knight" | "knave":
            text = clause(x, statement.kind)
        case "both-knights":
            text = f"{pair()} are both knights"
        case "both-knaves":
            text = f"{pair()} are both knaves"
        case "knight-or-knave":
            text = f"{clause(x, KNIGHT)} or {clause(statement.about[1], KNAVE)}"
        case "if-knight-then-knave":
            text = f"If {clause(x, KNIGHT)} then {clause(statement.about[1], KNAVE)}"
        case "same":
            text = f"{pair()} are the same kind"
        case _:  # "different"
            text = f"{pair()} are different kinds"
    return f"{text}."


def puzzle_text(statements: Sequence[Statement], names: Sequence[str]) -> str:
    """The puzzle as asked, without the format request: the people, the rule, each statement, what "or"
    and "if ... then" mean where a statement uses them, and the question."""
    lines = [
        f"There are {_WORDS.get(len(names), str(len(names)))} people: {listing(names)}. Each of them is one of "
        "two kinds, a knight or a knave. Knights always tell the truth, and knaves always lie.",
        *(f'{names[i]} says: "{statement_text(s, i, names)}"' for i, s in enumerate(statements)),
    ]
    kinds = {s.kind for s in statements}
    if "knight-or-knave" in kinds:
        lines.append('"A or B" means that at least one of A and B is true.')
    if "if-knight-then-knave" in kinds:
        lines.append('"If A then B" is false only when A is true and B is false.')
    lines.append("Who is a knight and who is a knave?")
    return "\n".join(lines)


# -- reading replies -----------------------------------------------------------------------------------
def canonical_roles(text: str) -> str | None:
    """A list of roles written "knight, Knave,knight" (brackets, quotes, "*" and a closing full stop
    around each allowed) in canonical form, "knight,knave,knight"; None when any item is not a role."""
    roles = [item.strip().strip("[]*`'\".").strip().lower() for item in text.split(",")]
    return ",".join(roles) if all(role in (KNIGHT, KNAVE) for role in roles) else None


@functools.cache
def _mention(names: tuple[str, ...]) -> re.Pattern[str]:
    """ "NAME is a knight", "NAME: knave", "NAME - knight" (any case, "a"/"an" optional) for these names; a
    mention after "if", "whether", "either", "suppose", "assume" or "assuming", or followed by "or" or "/"
    ("Alice is a knight or Bob is a knave", "Alice is a knight/knave") is marked, to be passed over."""
    people = "|".join(re.escape(name) for name in names)
    return re.compile(
        rf"(?P<condition>\b(?:if|whether|either|suppose|assume|assuming)\s+)?\b(?P<name>{people})\b"
        r"(?:\s+is\s+|\s*[:=\u2013\u2014-]\s*)(?:an?\s+)?(?P<role>knight|knave)\b(?P<alternative>\s*/|\s+or\b)?",
        re.IGNORECASE,
    )


def _mentions(text: str, names: Sequence[str]) -> list[tuple[int, str]]:
    """(person, role) of every mention of a person with a role in ``text`` (``_mention``), in order."""
    lowered = [name.lower() for name in names]
    found = []
    for match in _mention(tuple(names)).finditer(text):
        if match.group("condition") is None and match.group("alternative") is None:
            found.append((lowered.index(match.group("name").lower()), match.group("role").lower()))
    return found


def _assignment(mentions: Sequence[tuple[int, str]], people: int, *, consistent: bool) -> str | None:
    """The canonical roles when every person is mentioned (the last mention wins; with ``consistent``, a
    person given two roles is None)."""
    roles: dict[int, str] = {}
    for person, role in mentions:
        if consistent and roles.get(person, role) != role:
            return None
        roles[person] = role
    if len(roles) != people:
        return None
    return ",".join(roles[i] for i in range(people))


_MARKUP = re.compile(r"[*_`]")  # Markdown emphasis and code marks, dropped before reading
_ANSWER_LINE = re.compile(r"^[^\w\n]*(?:final\s+)?answer\s*:(?P<body>.*)$", re.IGNORECASE | re.MULTILINE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def read_answer_line(text: str, names: Sequence[str]) -> str | None:
    """The roles stated on the reply's last "Answer:" line ("Final answer:", Markdown emphasis and a heading or
    bullet mark before it allowed), or, where that line names nobody, on the lines right under it up to a
    blank line; None when there is no such line, a person is missing, or one is given two roles."""
    text = _MARKUP.sub("", text)
    lines = list(_ANSWER_LINE.finditer(text))
    if not lines:
        return None
    body = lines[-1].group("body")
    if not _mentions(body, names):
        body = _BLANK_LINE.split(text[lines[-1].end() :], maxsplit=1)[0]
    return _assignment(_mentions(body, names), len(names), consistent=True)


def read_roles(text: str, names: Sequence[str]) -> str | None:
    """moot's reading of a reply: its last "Answer:" line where it has one (``read_answer_line``), else the
    last role stated for each person in its final paragraph; None when a person has none."""
    text = _MARKUP.sub("", text)
    if _ANSWER_LINE.search(text):
        return read_answer_line(text, names)
    paragraphs = [p for p in _BLANK_LINE.split(text) if p.strip()]
    if not paragraphs:
        return None
    return _assignment(_mentions(paragraphs[-1], names), len(names), consistent=False)


_BRACES = re.compile(r"\{([^{}]*)\}")
_FINAL_ANSWER = re.compile(r"final\s+answer\s*:", re.IGNORECASE)


def read_final_answer(text: str, names: Sequence[str]) -> str | None:
    """The roles in the reply's last "{...}" (Choi et al.'s "{final answer: knight, knave, knight}", the
    roles in question order; "Alice is a knight, ..." read too); None when it has no "{...}" or its last
    does not give one role per person."""
    found = _BRACES.findall(text)
    if not found:
        return None
    body = _FINAL_ANSWER.sub("", found[-1]).strip()
    roles = canonical_roles(body)
    if roles is not None:
        return roles if roles.count(",") + 1 == len(names) else None
    return _assignment(_mentions(_MARKUP.sub("", body), names), len(names), consistent=True)


# -- the task ------------------------------------------------------------------------------------------
_ID = re.compile(r"knights(\d+)-s(-?\d+)-(\d+)")


def check_people(people: int) -> int:
    """``people``, or a ConfigError naming the allowed range."""
    if not MIN_PEOPLE <= people <= MAX_PEOPLE:
        raise ConfigError(f"knights:<n>: the number of people is {MIN_PEOPLE} to {MAX_PEOPLE}, got {people}")
    return people


class KnightsTask(TaskBase):
    """Knights and knaves among ``people`` people (2 to 8): name every person's role."""

    splits: tuple[str, ...] = ("generated",)
    offline_note = "generated (Smullyan's knights and knaves)"
    metric_description = "accuracy (every person's role right)"
    source_url = "Smullyan 1978; Wu et al., arXiv 2511.07784"

    def __init__(self, people: int = DEFAULT_PEOPLE, system_prompt: str | None = STEP_BY_STEP):
        self.people = check_people(people)
        self.answer_format = f"knights:{self.people}"  # its answer line names these people
        self.names = NAMES[:people]
        self.name = "knights" if people == DEFAULT_PEOPLE else f"knights:{people}"
        self.description = (
            f"knights and knaves among {people} people: who always tells the truth, who always lies (one solution)"
        )
        form = ", ".join(f"{name} is a [knight/knave]" for name in self.names)
        self.answer_instruction = (
            f'End your response with a line of the form "Answer: {form}", '
            "replacing each [knight/knave] with that person's role."
        )
        self.system_prompt = system_prompt

    def generate(self, seed: int, index: int) -> Question:
        """Question ``index`` of ``seed``, drawn from its own generator (so any prefix is stable)."""
        rng = random.Random(derive_seed("knights", self.people, seed, index))
        statements, knights = draw_puzzle(rng, self.people)
        roles = [KNIGHT if k else KNAVE for k in knights]
        return Question(
            id=f"knights{self.people}-s{seed}-{index}",
            prompt=puzzle_text(statements, self.names),
            gold=",".join(roles),
            metadata={
                "people": list(self.names),
                "statements": [
                    {"speaker": i, "kind": s.kind, "about": list(s.about)} for i, s in enumerate(statements)
                ],
                "solution": roles,
            },
        )

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions of ``seed``; the first k are the same for any count >= k (at most
        ``MAX_GENERATED_QUESTIONS``)."""
        check_at_most(count, MAX_GENERATED_QUESTIONS, f"the question count of generated task {self.name}")
        return [self.generate(seed, i) for i in range(count)]

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        """Questions by id ("knights<n>-s<seed>-<index>", n this task's number of people, index below
        ``MAX_GENERATED_QUESTIONS``), regenerated from their seed."""
        wanted: list[tuple[int, int]] = []
        for qid in ids:
            match = _ID.fullmatch(qid)
            if match is None or len(match.group(1)) > 2 or len(match.group(2)) > 20:
                raise ConfigError(f"{qid[:100]!r} is not a knights question id (knights<n>-s<seed>-<index>)")
            if int(match.group(1)) != self.people:
                raise ConfigError(
                    f"question {qid[:100]!r} has {int(match.group(1))} people; task {self.name} has {self.people} "
                    f"(its ids are knights{self.people}-s<seed>-<index>)"
                )
            digits = match.group(3).lstrip("0") or "0"
            if len(digits) > 9 or int(digits) >= MAX_GENERATED_QUESTIONS:
                raise ConfigError(
                    f"question {qid[:100]!r}: the index of a generated question is below {MAX_GENERATED_QUESTIONS:,}"
                )
            wanted.append((int(match.group(2)), int(digits)))
        return [self.generate(seed, index) for seed, index in wanted]

    def render(self, question: Question) -> str:
        return f"{question.prompt}\n{self.answer_instruction}"

    def choi_wording(self, question: Question) -> ChoiWording:
        """Choi et al.'s curly-bracket format request, the roles in the question's order (no example roles,
        as in ``answer_instruction``); replies read by ``read_final_answer``."""
        slots = ", ".join("[knight/knave]" for _ in self.names)
        instruction = (
            " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
            f'"{{final answer: {slots}}}", giving the role of {listing(self.names)} in that order.'
        )
        return ChoiWording(question.prompt, instruction, read=functools.partial(read_final_answer, names=self.names))

    def extract(self, text: str) -> Extraction:
        return Extraction.of(read_roles(text, self.names))

    def read_answer(self, text: str, question: Question) -> Extraction:
        """A moderator's or judge's answer field: read as a reply is, else as a bare list of one role per
        person in order ("knight, knave, knight")."""
        reply = self.read_reply(text, question)
        if reply.answer is not None:
            return reply
        roles = canonical_roles(text.strip().strip("{}"))
        return Extraction.of(roles if roles is not None and roles.count(",") + 1 == self.people else None)

    def score(self, answer: str, question: Question) -> bool:
        """Exact equality of the canonical roles ("knight,knave,knight")."""
        return canonical_roles(answer) == question.gold


TASKS.register("knights", KnightsTask)


def _people(argument: str) -> KnightsTask:
    """``knights:<n>``: n people, MIN_PEOPLE to MAX_PEOPLE."""
    if not (argument.isascii() and argument.isdigit()) or len(argument) > 6:
        raise ConfigError(
            f"knights:<n> needs a number of people from {MIN_PEOPLE} to {MAX_PEOPLE}, got {argument[:40]!r}"
        )
    return KnightsTask(int(argument))


PARAMETRISED.register("knights", _people)
