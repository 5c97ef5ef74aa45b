"""Multiple-choice questions: lettered choices, one shared answer extractor, letter scoring.

The extractor reads the forms the debate papers ask for: "(X)" (Du et al.; lm-evaluation-
harness's multiple-choice filter), "the answer is X" / "Answer: X", Choi et al.'s
"{final answer: X}", and a boxed letter "\\boxed{X}". The last match in the reply wins. A letter
outside the question's range is not an answer; a reply with none of these forms is unparsed (never a
guess), unless its opening sentence names one choice by its text (``reply_letter``, which reads a reply
with its question's choices).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from moot.tasks.base import Extraction, Question
from moot.tasks.data import DatasetTask, Row
from moot.tasks.wording import DU_MMLU, ChoiWording, DebateWording, choi_choice_wording, choi_choices

LETTERS = "ABCDEFGHIJ"

DU_INTRO = "Can you answer the following question as accurately as possible?"
DU_INSTRUCTION = "Explain your answer, putting the answer in the form (X) at the end of your response."

# "(B)", "( B )", "**(B)**"
_PAREN = r"\(\s*(?P<paren>[A-J])\s*\)"
# "the answer is B", "answer is: (B)", "Answer: **B**", "final answer is option B"; the letter stands alone
_ANSWER_IS = (
    r"(?i:answer)(?:\s+(?i:is|would\s+be|should\s+be))?\s*[:=\-]?\s*(?i:option\s+|choice\s+)?"
    r"[*_\s]*\(?(?P<stated>[A-J])(?![\w'])"
)
# "{final answer: B}", "{Final Answer: (B)}"
_FINAL = r"\{\s*(?i:final\s+answer)\s*:\s*\(?\s*(?P<final>[A-J])\s*\)?\s*\}"
# "\boxed{C}", "\boxed{(C)}", "\boxed{\text{C}}"
_BOXED = r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?\(?\s*(?P<boxed>[A-J])\s*\)?\s*\}?\s*\}"
_CHOICE = re.compile(f"{_FINAL}|{_BOXED}|{_ANSWER_IS}|{_PAREN}")


def _last_choice(text: str, letters: str) -> tuple[str, int] | None:
    """The last stated letter among ``letters`` and where its form ends."""
    found = None
    for match in _CHOICE.finditer(text):
        letter = match.group("final") or match.group("boxed") or match.group("stated") or match.group("paren")
        if letter in letters:
            found = (letter, match.end())
    return found


def choice_letter(text: str, letters: str = "ABCD") -> str | None:
    """The chosen letter of a reply: the last "(X)", "answer is X", "{final answer: X}" or "\\boxed{X}"
    whose letter is one of ``letters``; None when there is none."""
    found = _last_choice(text, letters)
    return found[0] if found is not None else None


_SENTENCE = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|$)", re.MULTILINE)  # up to a sentence's end or the line's


def reply_letter(text: str, question: Question, letters: str = "ABCD") -> str | None:
    """A reply's chosen letter, read with its question's choices (``metadata["choices"]``):

    1. the last stated letter (``choice_letter``), unless the words after it, to the end of their sentence, are
       exactly another choice's text ("(A) Mass, velocity, and acceleration" where that is (B)'s text): the reply
       contradicts itself and is unparsed;
    2. in a reply that states no letter, the choice its opening sentence names by its text, when it names one
       ("The description exemplifies the Cannon-Bard theory.", "(X) Eating hamburgers may cause indigestion.",
       "(P) bar"): choices with the same text are one answer (the first letter), and a choice's text inside
       another named one ("bar" in "bar stool") is not named on its own; a sentence naming two is unparsed;
    3. else None."""
    choices = [_plain(str(c)) for c in question.metadata.get("choices", [])][: len(letters)]
    found = _last_choice(text, letters)
    if found is not None:
        letter, end = found
        sentence = _SENTENCE.match(text, end)
        after = _plain(sentence.group()) if sentence is not None else ""
        own = choices[letters.index(letter)] if letters.index(letter) < len(choices) else None
        return None if after != own and after in choices else letter
    opening = next((m.group() for m in _SENTENCE.finditer(text.strip()) if m.group().strip()), "")
    named = {c for c in choices if c and f" {c} " in f" {_plain(opening)} "}
    named = {c for c in named if not any(c != other and f" {c} " in f" {other} " for other in named)}
    return letters[choices.index(named.pop())] if len(named) == 1 else None


# A letter standing for the whole field, or opening it: "B", "(B)", "B)", "B.", "B:", "**B**", "$B$", "Option B",
# "choice (B)", "answer: B", "Answer - B) Paris", "Option B - Paris", "B, not A". A letter followed only by a
# space ("A person...") is not one, nor one before a hyphen ("B-cell").
_FIELD = re.compile(
    r"^[\s*_\"'`$]*(?:(?i:(?:the\s+)?(?:final\s+|correct\s+)?answer(?:\s+is)?)\s*[:=\-]?\s*)?"
    r"(?:(?i:option|choice)\s*[:\-]?\s*)?[*_\"'`$]*[(\[]?\s*(?P<letter>[A-J])\s*"
    r"(?:[)\]]|[.:](?!\w)|[-\u2013\u2014]\s|,?\s*(?i:not|rather\s+than|instead\s+of)\b|[*_\"'`$\s]*$)"
)
# LaTeX around a letter: \boxed{C}, \text{C}, \textbf{C} and \mathrm{C} become C; \( \) \[ \] become spaces
_LATEX = re.compile(r"\\(?:boxed|text|textbf|mathrm)\s*\{(?P<inner>[^{}]*)\}|\\[()\[\]]")


def field_letter(text: str, question: Question, letters: str = "ABCD") -> str | None:
    """The letter stated in a moderator's or judge's answer field; LaTeX around it aside (``\\boxed{C}``,
    ``\\(C\\)``). A leading answer wins over later mentions, since a moderator may name a choice to reject
    it ("(B) Paris, not (A) London" is B):

    1. a field that is, or opens with, a letter: "B", "B)", "B. Paris", "(B) Paris, not (A) London",
       "B, not A", "Option B - Paris", "answer: B", "The correct answer is C.";
    2. else as in a reply: the last "(X)", "the answer is X" or "{final answer: X}";
    3. else a field that is exactly one choice's text, case, punctuation and a leading "the", "a" or "an"
       aside ("Stems would wilt" for "The stems would wilt.").

    Prose that merely mentions a choice's text is not read. A letter outside ``letters`` is no answer.
    None when none of these holds.
    """
    field = _LATEX.sub(lambda m: m.group("inner") if m.group("inner") is not None else " ", text)
    match = _FIELD.match(field)
    if match is not None and match.group("letter") in letters:
        return match.group("letter")
    if (letter := choice_letter(field, letters)) is not None:
        return letter
    plain = _plain(field)
    choices = [_plain(str(c)) for c in question.metadata.get("choices", [])][: len(letters)]
    hits = [i for i, c in enumerate(choices) if c and c == plain]
    return letters[hits[0]] if len(hits) == 1 else None


def _plain(text: str) -> str:
    """Lower case, words only (punctuation becomes space), without a leading article."""
    words = re.sub(r"[^\w]+", " ", text.lower()).split()
    return " ".join(words[1:] if words[:1] in (["the"], ["a"], ["an"]) and len(words) > 1 else words)


def lettered(choices: Sequence[str]) -> str:
    """'(A) first\\n(B) second...'"""
    return "\n".join(f"({LETTERS[i]}) {choice.strip()}" for i, choice in enumerate(choices))


class MultipleChoiceTask(DatasetTask):
    """A dataset task whose questions are a stem and lettered choices; the gold is a letter.

    ``Question.prompt`` holds the stem and the lettered choices; ``metadata["choices"]`` the
    choice texts in the order shown.
    """

    answer_format = "choice"

    letters = "ABCD"
    intro = DU_INTRO
    answer_instruction = DU_INSTRUCTION

    def render(self, question: Question) -> str:
        intro = f"{self.intro}\n\n" if self.intro else ""
        return f"{intro}{question.prompt}\n\n{self.answer_instruction}"

    def debate_wording(self, question: Question) -> DebateWording:
        """Du et al.'s MMLU wording, for every multiple-choice task (Du et al. ran only MMLU)."""
        return DU_MMLU

    def choi_wording(self, question: Question) -> ChoiWording:
        """Choi et al.'s MMLU and CSQA template: the stem, "(A) text" lines, "{final answer: (A)}"."""
        stem, choices = self.parts(question)
        return choi_choice_wording(choi_choices(stem, choices))

    def parts(self, question: Question) -> tuple[str, list[str]]:
        """The stem and choice texts of a question made by ``choice_question`` (else the whole prompt, no choices)."""
        choices = [str(c) for c in question.metadata.get("choices", [])]
        block = "\n\n" + lettered(choices)
        if choices and question.prompt.endswith(block):
            return question.prompt[: -len(block)], choices
        return question.prompt, []

    def extract(self, text: str) -> Extraction:
        return Extraction.of(choice_letter(text, self.letters))

    def read_reply(self, text: str, question: Question) -> Extraction:
        """The reply's letter read with the question's choices (``reply_letter``)."""
        return Extraction.of(reply_letter(text, question, self.letters))

    def read_answer(self, text: str, question: Question) -> Extraction:
        return Extraction.of(field_letter(text, question, self.letters))

    def score(self, answer: str, question: Question) -> bool:
        return answer.strip().upper() == question.gold

    def choice_question(
        self,
        row: Row,
        qid: str,
        stem: str,
        choices: Sequence[str],
        gold: int,
        gold_field: str,
        **metadata: object,
    ) -> Question:
        """A question with lettered choices; ``gold`` is the 0-based index of the right one."""
        if len(choices) > len(self.letters):
            raise row.error(
                gold_field, f"belongs to a question with {len(choices)} choices; {self.name} allows {len(self.letters)}"
            )
        if not 0 <= gold < len(choices):
            raise row.error(gold_field, f"points outside the {len(choices)} choices")
        return Question(
            id=qid,
            prompt=f"{stem.strip()}\n\n{lettered(choices)}",
            gold=LETTERS[gold],
            metadata={"choices": [c.strip() for c in choices], **metadata},
        )
