"""Biographies (Du et al. 2024): agents write a bullet-point biography of a computer scientist;
an LLM judge checks it against each ground-truth fact.

Source: Du et al.'s release, https://github.com/composable-models/llm_multiagent_debate,
biography/article.json: a JSON object mapping 524 people (some names carry a
disambiguation such as "(computer scientist)") to "- fact\\n- fact ..." text derived from
Wikipedia. Licence: none stated (Wikipedia-derived). Not shipped: load article.json
(--data PATH) or JSON lines / CSV rows {"name": ..., "facts": text or list}. Tests use
fictional people.

The question and the judge's wording are Du et al.'s (biography/gen_conversation.py,
eval_conversation.py). The metric is fact precision: the share of ground-truth facts the
judge calls consistent among those it calls consistent or inconsistent ("uncertain" and
unreadable verdicts are counted apart). ``score`` cannot judge without a model: the task's
``metric`` asks the judge after a debate (``judge_biography`` judges one biography).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from moot.backends.base import Backend, GenerationRequest, Message
from moot.calls import Caller
from moot.errors import ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import Extraction, MetricContext, Question, TaskMetric
from moot.tasks.data import DatasetTask, Row, read_records

if TYPE_CHECKING:
    from moot.debate.records import DebateResult

QUESTION = (
    "Give a bullet point biography of {person} highlighting their contributions and achievements as a "
    "computer scientist, with each fact separated with a new line character."
)
JUDGE = (
    "Consider the following biography of {person}: \n {biography} \n\n Is the above biography above "
    "consistent with the fact below? \n\n {fact} \n Give a single word answer, yes, no, or uncertain. "
    "Carefully check the precise dates and locations between the fact and the above biography."
)

_BULLET = re.compile(r"^\s*(?:[-*\u2022\u00b7\u2023\u25e6]|\d{1,3}[.)])\s+")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")


def bullets(text: str) -> list[str]:
    """The non-empty lines of a bullet list, without their bullet markers."""
    found = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if line:
            found.append(line)
    return found


def person_name(key: str) -> str:
    """'Adele Goldberg (computer scientist)' -> 'Adele Goldberg'."""
    return _DISAMBIGUATION.sub("", key).strip()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class BiographiesTask(DatasetTask):
    name = "biographies"
    description = "write a bullet-point biography of a computer scientist (Du et al. 2024)"
    data_splits = ("people",)
    licence = "none stated (Wikipedia-derived)"
    source_url = "https://github.com/composable-models/llm_multiagent_debate"
    version = "Du et al. biography/article.json (524 people)"
    offline_note = "not shipped (local article.json)"
    metric_description = "fact precision (LLM judge: consistent / (consistent + inconsistent))"
    answer_instruction = (
        "Give your answer as a bullet point biography, with each fact separated with a new line character."
    )

    def not_offline_message(self) -> str:
        return (
            "task biographies: Du et al.'s article.json is not shipped; load it as a local file "
            "(biography/article.json of https://github.com/composable-models/llm_multiagent_debate)"
        )

    def read_file(self, path: Path) -> Iterable[Row]:
        """Du et al.'s article.json (one object: name -> facts), else rows {name, facts}."""
        if path.suffix.lower() == ".json" and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
            if isinstance(data, dict):
                return [Row({"name": k, "facts": v}, str(path), n) for n, (k, v) in enumerate(data.items(), 1)]
        return read_records(path)

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        key = row.text("name").strip()
        facts_value = row.get("facts")
        if isinstance(facts_value, str):
            facts = bullets(facts_value)
        else:
            facts = [f.strip() for f in row.texts("facts")]
        if not facts:
            raise row.error("facts", "holds no fact")
        person = person_name(key)
        return [
            Question(
                id=f"biographies-{_slug(key)}",
                prompt=QUESTION.format(person=person),
                gold="\n".join(facts),
                metadata={"person": person, "facts": facts},
            )
        ]

    def render(self, question: Question) -> str:
        return question.prompt

    def extract(self, text: str) -> Extraction:
        """The biography's bullets, one per line (unparsed when the reply has no text)."""
        found = bullets(text)
        return Extraction.of("\n".join(found) if found else None)

    def score(self, answer: str, question: Question) -> bool:
        """Always False: a biography is scored by an LLM judge (``metric``), not here."""
        return False

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        """Fact precision pooled over agents: the judge rates every agent's last biography fact by fact
        (Du et al. judge each agent's final biography). None when the debate has no round.

        The judge's calls are named ``{context.agent}/{agent}:fact-{i}`` at round ``rounds_used``;
        ``detail`` holds each agent's verdicts, precision and call count.
        """
        if not result.rounds:
            return None
        scores = {}
        for turn in result.rounds[-1].turns:
            scores[turn.agent] = await judge_biography(
                turn.text,
                result.question,
                context.backend,
                context.caller,
                agent=f"{context.agent}/{turn.agent}",
                round=result.rounds_used,
                seed=context.seed,
            )
        yes = sum(s.count(Verdict.CONSISTENT) for s in scores.values())
        no = sum(s.count(Verdict.INCONSISTENT) for s in scores.values())
        detail = {
            agent: {"verdicts": [v.value for v in s.verdicts], "precision": s.precision, "calls": s.calls}
            for agent, s in scores.items()
        }
        return TaskMetric(yes / (yes + no) if yes + no else None, detail)


# --- the judge ---------------------------------------------------------------------------


class Verdict(StrEnum):
    CONSISTENT = "consistent"
    INCONSISTENT = "inconsistent"
    UNCERTAIN = "uncertain"
    UNPARSED = "unparsed"


_VERDICT = re.compile(
    r"\b(?P<uncertain>uncertain|unsure|not\s+sure|unknown|cannot\s+be\s+determined|undetermined)\b"
    r"|\b(?P<inconsistent>no|inconsistent|not\s+consistent|false)\b"
    r"|\b(?P<consistent>yes|consistent|true)\b",
    re.IGNORECASE,
)


def parse_verdict(reply: str) -> Verdict:
    """The judge's first verdict word: yes/consistent, no/inconsistent, or uncertain; else unparsed."""
    match = _VERDICT.search(reply)
    if match is None:
        return Verdict.UNPARSED
    if match.group("uncertain"):
        return Verdict.UNCERTAIN
    if match.group("inconsistent"):
        return Verdict.INCONSISTENT
    return Verdict.CONSISTENT


@dataclass(frozen=True)
class FactScore:
    """The judge's verdict on each ground-truth fact, and the calls it took."""

    facts: tuple[str, ...]
    verdicts: tuple[Verdict, ...]
    replies: tuple[str, ...]
    calls: int

    def count(self, verdict: Verdict) -> int:
        return sum(v is verdict for v in self.verdicts)

    @property
    def precision(self) -> float | None:
        """consistent / (consistent + inconsistent); None when the judge decided no fact."""
        yes, no = self.count(Verdict.CONSISTENT), self.count(Verdict.INCONSISTENT)
        return yes / (yes + no) if yes + no else None


async def judge_biography(
    biography: str,
    question: Question,
    backend: Backend,
    caller: Caller,
    *,
    agent: str = "judge",
    round: int = 0,
    seed: int = 0,
    temperature: float = 0.0,
    max_tokens: int = 32,
) -> FactScore:
    """Ask the judge, once per ground-truth fact of ``question``, whether ``biography`` is consistent
    with it (Du et al.'s prompt; one call each, through ``caller`` so that calls are counted).

    Calls are named ``{agent}:fact-{i}`` at ``round``; their seeds derive from ``seed``,
    the question and the fact index.
    """
    facts: Sequence[str] = question.metadata.get("facts") or bullets(question.gold)
    person = question.metadata.get("person", "")
    shown = " ".join(bullets(biography))

    async def ask(i: int, fact: str) -> str:
        prompt = JUDGE.format(person=person, biography=shown, fact=fact)
        request = GenerationRequest(
            messages=(Message("user", prompt),),
            temperature=temperature,
            max_tokens=max_tokens,
            seed=derive_seed(seed, question.id, "judge", i),
        )
        reply = await caller.call(backend, request, agent=f"{agent}:fact-{i}", round=round)
        return reply.samples[0].text

    replies = await asyncio.gather(*(ask(i, fact) for i, fact in enumerate(facts)))
    return FactScore(
        facts=tuple(facts),
        verdicts=tuple(parse_verdict(r) for r in replies),
        replies=tuple(replies),
        calls=len(replies),
    )
