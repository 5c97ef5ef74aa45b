"""Biographies (Du et al. 2024): agents write a bullet-point biography of a computer scientist;
an LLM judge checks it against each ground-truth fact.

Source: Du et al.'s release, https://github.com/composable-models/llm_multiagent_debate,
biography/article.json: a JSON object mapping 524 people (some names carry a
disambiguation such as "(computer scientist)") to "- fact\\n- fact ..." text derived from
Wikipedia. Licence: none stated (Wikipedia-derived). Not shipped: load article.json
(--data PATH) or JSON lines / CSV rows {"name": ..., "facts": text or list}. Tests use
fictional people.

The question and the judge's wording are Du et al.'s (biography/gen_conversation.py,
eval_conversation.py), and so are the evaluation's rules:

- bullets: each line, cut before its first letter; a line without a letter is dropped (so a
  leading "1961: " or "3. " goes too); the biography shown to the judge is its bullets joined
  by spaces. Ground-truth facts given as text are split the same way.
- skip: a reply whose only bullet is shorter than 400 characters (the model does not know
  the person) is not judged; the metric's detail counts such replies and names the rule.
- verdict: a reply containing "uncertain" (any case) is uncertain; else one containing "yes"
  is consistent; else one containing "no" is inconsistent (so "not sure" and "cannot" read
  as no, as in Du's code); else unparsed.

The metric is fact precision: consistent / (consistent + inconsistent) over the judged
replies' facts ("uncertain" and unparsed verdicts are counted apart: Du et al. drop them).
Differences, deliberate: the judge samples at the condition's judge settings (temperature 0
by default; Du et al. used the API default), and the value is per question (pooled over its
agents) where Du et al. pool every fact of the run. ``score`` cannot judge without a model:
the task's ``metric`` asks the judge after a debate (``judge_biography`` judges one biography).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.backends.base import Backend, GenerationRequest, Message
from moot.calls import Caller
from moot.errors import ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import Extraction, MetricContext, Question, TaskMetric
from moot.tasks.data import DatasetTask, Row, read_records
from moot.tasks.registry import TASKS
from moot.tasks.wording import DebateWording, du_biographies

if TYPE_CHECKING:
    from moot.debate.records import DebateResult

QUESTION = (
    "Give a bullet point biography of {person} highlighting their contributions and achievements as a "
    "computer scientist, with each fact separated with a new line character. "
)
JUDGE = (
    "Consider the following biography of {person}: \n {biography} \n\n Is the above biography above "
    "consistent with the fact below? \n\n {fact} \n Give a single word answer, yes, no, or uncertain. "
    "Carefully check the precise dates and locations between the fact and the above biography."
)

_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")


SKIP_CHARS = 400  # Du et al.: a reply of one bullet shorter than this is not judged
SKIP_RULE = f"a single bullet shorter than {SKIP_CHARS} characters (Du et al.: the model does not know the person)"


def bullets(text: str) -> list[str]:
    """Du et al.'s bullets: every line (split at "\\n") from its first letter on; lines without a
    letter are dropped. Markers go ("- ", "* ", "1. ") and so does any other lead ("1961: born"
    is "born"); the rest of the line is kept as written."""
    found = []
    for line in text.split("\n"):
        start = next((i for i, ch in enumerate(line) if ch.isalpha()), None)
        if start is not None:
            found.append(line[start:])
    return found


def skip_reason(biography: str) -> str | None:
    """Why Du et al. would not judge this reply (``SKIP_RULE``), or None when it is judged."""
    found = bullets(biography)
    return SKIP_RULE if len(found) == 1 and len(found[0]) < SKIP_CHARS else None


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
    metric_uses_judge = True
    source_url = "https://github.com/composable-models/llm_multiagent_debate"
    version = "Du et al. biography/article.json (524 people)"
    offline_note = "not shipped (local article.json)"
    metric_description = "fact precision (LLM judge: consistent / (consistent + inconsistent))"
    accuracy_applies = False
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

    def debate_wording(self, question: Question) -> DebateWording:
        """Du et al.'s biography rounds (gen_conversation.py): "Agent response" headings, and in the
        protocol's last round "Closely examine your biography and the biography of other agents"."""
        return du_biographies(str(question.metadata.get("person", "")))

    def extract(self, text: str) -> Extraction:
        """The biography's bullets, one per line (unparsed when no line has a letter)."""
        found = bullets(text)
        return Extraction.of("\n".join(found) if found else None)

    def score(self, answer: str, question: Question) -> bool:
        """Always False: a biography is scored by an LLM judge (``metric``), not here."""
        return False

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        """Fact precision pooled over agents: the judge rates every agent's last biography fact by fact
        (Du et al. judge each agent's final biography), except replies Du et al. skip (``skip_reason``).
        None when the debate has no round, or when no fact got a yes or a no.

        The judge's calls are named ``{context.agent}/{agent}:fact-{i}`` at round ``rounds_used``;
        ``detail`` holds, per agent, the verdicts, precision, call count and skip reason (None when
        judged), and ``skipped_replies``: how many replies were skipped.
        """
        if not result.rounds:
            return None
        detail: dict[str, Any] = {}
        yes = no = skipped = 0
        for turn in result.rounds[-1].turns:
            reason = skip_reason(turn.text)
            if reason is not None:
                skipped += 1
                detail[turn.agent] = {"verdicts": [], "precision": None, "calls": 0, "skipped": reason}
                continue
            score = await judge_biography(
                turn.text,
                result.question,
                context.backend,
                context.caller,
                agent=f"{context.agent}/{turn.agent}",
                round=result.rounds_used,
                seed=context.seed,
                temperature=context.temperature,
                max_tokens=context.max_tokens,
            )
            yes += score.count(Verdict.CONSISTENT)
            no += score.count(Verdict.INCONSISTENT)
            detail[turn.agent] = {
                "verdicts": [v.value for v in score.verdicts],
                "precision": score.precision,
                "calls": score.calls,
                "skipped": None,
            }
        detail["skipped_replies"] = skipped
        return TaskMetric(yes / (yes + no) if yes + no else None, detail)


# --- the judge ---------------------------------------------------------------------------


class Verdict(StrEnum):
    CONSISTENT = "consistent"
    INCONSISTENT = "inconsistent"
    UNCERTAIN = "uncertain"
    UNPARSED = "unparsed"


def parse_verdict(reply: str) -> Verdict:
    """Du et al.'s reading of the judge (parse_yes_no): substrings of the lower-cased reply, in this
    order: "uncertain", then "yes", then "no" (anywhere: "not sure", "cannot" and "unknown" read as
    no); a reply with none of them is unparsed. Uncertain and unparsed are both left out of precision."""
    lowered = reply.lower()
    if "uncertain" in lowered:
        return Verdict.UNCERTAIN
    if "yes" in lowered:
        return Verdict.CONSISTENT
    if "no" in lowered:
        return Verdict.INCONSISTENT
    return Verdict.UNPARSED


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
    max_tokens: int = 512,
) -> FactScore:
    """Ask the judge, once per ground-truth fact of ``question``, whether ``biography`` (its bullets
    joined by spaces, as Du et al. show it) is consistent with it (Du et al.'s prompt; one call each,
    through ``caller`` so that calls are counted). Skipping is the caller's rule (``skip_reason``).

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


TASKS.register("biographies", BiographiesTask)
