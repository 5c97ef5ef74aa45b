"""Liang et al.'s debate (MAD, "Encouraging Divergent Thinking"): an affirmative and a negative debater
speak in turn, a moderator evaluates each round, and a final judge decides at the cap.

The prompt wording is Liang et al.'s release (Skytliang/Multi-Agents-Debate, code/utils/config4all.json:
the debater and moderator meta prompts, the negative side's opening, the rebuttal, the moderator's
JSON schema with the round as an ordinal word, and the final judge's two steps), reproduced for the
protocol's fidelity; the topic is the task's rendered question, format request included. The final
judge reads the debaters' first-round answers, as the release does (``memory_lst[2]``).

``moderator_prompt``: ``liang`` (the release's), ``strict`` (the stopping study's strict variant: it
also asks for a 0-100 confidence and to leave ``debate_answer`` empty when more rounds may help; the
study's exact wording is not public, so this sentence is moot's) or ``confidence`` (moot 0.1's: the
confidence field only). A ruling is read as Liang's code reads it (a Python literal) but safely: the last
complete object as JSON, as JSON with LaTeX backslashes kept, or with ``ast.literal_eval``, never with
eval; one repair call only when none of these reads it. By default the debaters' system message is the
task's instruction followed by the debater meta prompt (``instruction = "task"``), so that Liang's arm is
instructed as every other arm; ``instruction = "none"`` is the release's setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from moot.backends.base import Message
from moot.debate.components.stopping.judge import read_confidence, read_object
from moot.debate.context import JUDGE_NAME, MODERATOR_NAME
from moot.debate.records import JudgeVerdict, RoundRecord, StopReason, Turn
from moot.debate.registry import register, template
from moot.debate.schedules import Schedule
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task

if TYPE_CHECKING:
    from moot.debate.agents import AgentSpec
    from moot.debate.context import Debate

ROLES = ("affirmative", "negative")


@template
def debater_system(task: Task, question: Question) -> str:
    return (
        "You are a debater. Hello and welcome to the debate. It's not necessary to fully agree with each "
        "other's perspectives, as our objective is to find the correct answer.\nThe debate topic is stated as "
        f"follows:\n{task.render(question)}"
    )


@template
def opening(task: Task, question: Question) -> Message:
    return Message("user", task.render(question))


@template
def negative_opening(affirmative: str) -> Message:
    return Message("user", f"{affirmative}\n\nYou disagree with my answer. Provide your answer and reasons.")


@template
def rebuttal(other: str) -> Message:
    return Message("user", f"{other}\n\nDo you agree with my perspective? Please provide your reasons and answer.")


@template
def moderator_system(task: Task, question: Question) -> str:
    return (
        "You are a moderator. There will be two debaters involved in a debate. They will present their answers "
        f'and discuss their perspectives on the following topic: "{task.render(question)}"\nAt the end of each '
        "round, you will evaluate answers and decide which is correct."
    )


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
ModeratorPrompt = Literal["liang", "strict", "confidence"]


def ordinal(round_index: int) -> str:
    """Round 0 is the "first" round, as Liang et al.'s round_dct words it (numbers beyond the tenth)."""
    return ORDINALS[round_index] if round_index < len(ORDINALS) else f"{round_index + 1}th"


@template
def moderator_prompt(round_index: int, affirmative: str, negative: str, variant: ModeratorPrompt = "liang") -> Message:
    fields = '"Whether there is a preference": "Yes or No", "Supported Side": "Affirmative or Negative", "Reason": "", "debate_answer": ""'
    strict = ""
    if variant != "liang":
        fields += ', "confidence": "0-100"'
    if variant == "strict":
        strict = (
            " Also rate your confidence, from 0 to 100, that the final answer is correct. If you think further "
            "rounds of debate may help improve the answer, leave debate_answer empty."
        )
    return Message(
        "user",
        f"Now the {ordinal(round_index)} round of debate for both sides has ended.\n\nAffirmative side arguing:\n"
        f"{affirmative}\n\nNegative side arguing: {negative}\n\nYou, as the moderator, will evaluate both sides' "
        "answers and determine if there is a clear preference for an answer candidate. If so, please summarize "
        "your reasons for supporting affirmative/negative side and give the final answer that you think is "
        f"correct, and the debate will conclude. If not, the debate will continue to the next round.{strict} Now "
        f"please output your answer in json format, with the format as follows: {{{fields}}}. Please strictly "
        "output in JSON format, do not output irrelevant content.",
    )


@template
def judge_candidates_prompt(affirmative: str, negative: str) -> Message:
    return Message(
        "user",
        f"Affirmative side arguing: {affirmative}\n\nNegative side arguing: {negative}\n\n"
        "Now, what answer candidates do we have? Present them without reasons.",
    )


@template
def judge_decision_prompt(task: Task, question: Question) -> Message:
    return Message(
        "user",
        f"Therefore, {task.render(question)}\nPlease summarize your reasons and give the final answer that you "
        'think is correct. Now please output your answer in json format, with the format as follows: {"Reason": '
        '"", "debate_answer": ""}. Please strictly output in JSON format, do not output irrelevant content.',
    )


@template
def repair_prompt() -> Message:
    return Message(
        "user",
        "Your reply was not valid JSON in the requested format. Reply again with only the JSON object, nothing else.",
    )


@dataclass(frozen=True)
class ModeratorReading:
    """A moderator's or final judge's ruling as read: ``valid`` says whether a JSON-like object could be
    read at all (``ruling_readable``); a None field was missing or invalid."""

    valid: bool
    preference: bool | None
    side: str | None
    answer_text: str | None
    confidence: float | None


_PREFERENCE = {"yes": True, "no": False, "true": True, "false": False}


def read_moderator(text: str) -> ModeratorReading:
    """Read a ruling the way Liang et al.'s code does (it evals the reply), safely: the last complete
    top-level object that reads as a dict, by strict JSON, then JSON with stray backslashes (``\\(``,
    ``\\boxed``) kept, then ``ast.literal_eval`` (single quotes, True/False), never ``eval``
    (``read_object``; a ```json fence is fine; keys in any case). Its fields: the preference ("Yes",
    "No", or a bool), the supported side (affirmative or negative), the ``debate_answer`` text (None when
    empty) and the confidence on the 0-100 scale (``read_confidence``: 90, "90", "90%", "90/100", "9/10"
    and 0.95 are 90 or 95; words or values outside 0-100: None, never clipped). Unreadable (``valid``
    False) only when no reader can read any object: then, and only then, ``moderate`` asks for a repair."""
    keys = read_object(text)
    if keys is None:
        return ModeratorReading(False, None, None, None, None)
    preference = _PREFERENCE.get(str(keys.get("whether there is a preference", "")).strip().lower())
    side = str(keys.get("supported side", "")).strip().lower()
    answer = keys.get("debate_answer")
    answer_text = str(answer).strip() if answer is not None else ""
    confidence = read_confidence(keys.get("confidence"))
    return ModeratorReading(True, preference, side if side in ROLES else None, answer_text or None, confidence)


def ruling_readable(text: str) -> bool:
    """Whether a moderator's or final judge's reply holds a ruling that ``read_moderator`` can read (a
    report counts the unreadable ones; only those cost a repair call)."""
    return read_moderator(text).valid


async def moderate(debate: Debate, messages: Sequence[Message], name: str, round_index: int) -> JudgeVerdict:
    """A moderator or final-judge JSON call, with one repair call if the JSON does not validate."""
    reply = await debate.ask(name, messages, round_index)
    text, prompt, completion, latency = reply.text, reply.prompt_tokens, reply.completion_tokens, reply.latency_s
    reading, calls = read_moderator(text), 1
    if not reading.valid:
        repaired = await debate.ask(name, [*messages, Message("assistant", text), repair_prompt()], round_index, step=1)
        text, reading, calls = repaired.text, read_moderator(repaired.text), 2
        prompt, completion = prompt + repaired.prompt_tokens, completion + repaired.completion_tokens
        latency += repaired.latency_s
    task, question = debate.task, debate.question
    answer = task.read_answer(reading.answer_text, question).answer if reading.answer_text is not None else None
    return JudgeVerdict(
        text, answer, reading.confidence, prompt, completion, latency, reading.preference, calls, reading.answer_text
    )


@register
class Liang(Schedule):
    """The affirmative speaks, then the negative answers it (in turn, not simultaneously); the moderator
    rules after each round; at the cap a final judge lists the candidates and decides."""

    kind: Literal["liang"] = "liang"
    moderator_prompt: ModeratorPrompt | None = Field(
        default=None,
        description="liang: the release's moderator prompt; strict: the stopping study's (asks a 0-100 "
        "confidence, and to leave debate_answer empty when more rounds may help); confidence: the release's "
        "plus a confidence field (moot 0.1's); unset: confidence when the stopping rule reads one, else liang",
    )
    final_judge: bool = Field(
        default=True,
        description="at the cap a final judge decides; false: the last moderator's debate_answer is scored "
        "(the stopping study's prompt-matched control)",
    )
    needs_helper = True
    moderated = True
    # The debaters keep their own conversations and hear each other in turn: no topology, history, rendering,
    # initialiser, retention or cue slot applies (the stopping rule and the aggregation check what they need).
    slots = frozenset()

    def check(self, protocol: Any) -> None:
        if protocol.agents != 2 or not protocol.aggregation.judged:
            raise ValueError(
                "style 'liang' needs exactly 2 agents (affirmative, negative) and an aggregation that takes the "
                "moderator's answer ('moderator')"
            )

    def describe(self, protocol: Any = None) -> str:
        judge = "final judge at the cap" if self.final_judge else "no final judge: the last moderator answer counts"
        prompt = self.prompt_variant(protocol) if protocol is not None else self.moderator_prompt or "auto"
        return f"liang (moderator prompt: {prompt}; {judge})"

    def calls_per_round(self, protocol: Any) -> str:
        judge = "; 2 final-judge calls at the cap" if self.final_judge else ""
        return f"2 debater calls + 1 moderator call (+1 if its JSON needs repair){judge}"

    def topology_text(self, protocol: Any) -> str:
        return "roles"

    def start(self, debate: Debate) -> None:
        task, question = debate.task, debate.question
        debate.histories = [[Message("system", self.debater_prompt(debate, a.spec))] for a in debate.agents]
        debate.histories[0].append(opening(task, question))

    def debater_prompt(self, debate: Debate, agent: AgentSpec) -> str:
        """A debater's system message: its persona, else Liang's debater meta prompt, preceded by the task's
        instruction when the protocol carries it (``instruction = "task"``), so that Liang's debaters are
        instructed as every other arm's agents are; Liang's own setting is ``instruction = "none"``."""
        meta = debater_system(debate.task, debate.question)
        if agent.persona is not None:
            return agent.persona
        instruction = debate.protocol.system_prompt(debate.task, agent)
        return f"{instruction}\n\n{meta}" if instruction else meta

    def _moderator_history(self, debate: Debate) -> list[Message]:
        """The moderator's conversation so far: its system prompt, then each round's prompt and ruling."""
        messages = [Message("system", moderator_system(debate.task, debate.question))]
        for record in debate.records:
            assert record.judge is not None
            messages += [
                self._moderator_prompt(debate, record.index, record.turns),
                Message("assistant", record.judge.text),
            ]
        return messages

    def prompt_variant(self, protocol: Any) -> ModeratorPrompt:
        """The moderator prompt in use: the one set, else the one the stopping rule needs."""
        if self.moderator_prompt is not None:
            return self.moderator_prompt
        return "confidence" if protocol.stopping.needs_moderator_confidence else "liang"

    def moderator_states_confidence(self, protocol: Any) -> bool:
        return self.prompt_variant(protocol) != "liang"

    def _moderator_prompt(self, debate: Debate, round_index: int, turns: Sequence[Turn]) -> Message:
        return moderator_prompt(
            round_index, turns[0].peer_text, turns[1].peer_text, self.prompt_variant(debate.protocol)
        )

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        r, histories = round_index, debate.histories
        affirmative, negative = debate.agents
        previous = debate.records[-1].turns if debate.records else None
        if previous is not None:
            histories[0].append(rebuttal(previous[1].peer_text))
        first = await debate.speak(affirmative, histories[0], r)
        histories[0].append(Message("assistant", first.peer_text))
        histories[1].append(negative_opening(first.peer_text) if previous is None else rebuttal(first.peer_text))
        second = await debate.speak(negative, histories[1], r)
        histories[1].append(Message("assistant", second.peer_text))
        turns = (first, second)
        protocol = debate.protocol
        vote = protocol.aggregation.vote(
            turns, protocol.tie_rule, derive_seed(debate.seed, debate.question.id, "tie", r)
        )
        asked = [*self._moderator_history(debate), self._moderator_prompt(debate, r, turns)]
        verdict = await moderate(debate, asked, MODERATOR_NAME, r)
        return RoundRecord(index=r, turns=turns, vote=vote, judge=verdict)

    async def finish(self, debate: Debate, stop_reason: StopReason) -> JudgeVerdict | None:
        """Liang's final judge at the cap: list the candidates, then decide (two calls, plus a repair). It
        reads the debaters' first-round answers, as the release does (their ``memory_lst[2]``)."""
        if stop_reason != StopReason.MAX_ROUNDS or not self.final_judge:
            return None
        task, question, first = debate.task, debate.question, debate.records[0]
        r = len(debate.records)
        messages = [
            Message("system", moderator_system(task, question)),
            judge_candidates_prompt(first.turns[0].peer_text, first.turns[1].peer_text),
        ]
        listed = await debate.ask(JUDGE_NAME, messages, r)
        messages += [Message("assistant", listed.text), judge_decision_prompt(task, question)]
        verdict = await moderate(debate, messages, JUDGE_NAME, r)
        return JudgeVerdict(
            verdict.text,
            verdict.answer,
            verdict.confidence,
            verdict.prompt_tokens + listed.prompt_tokens,
            verdict.completion_tokens + listed.completion_tokens,
            verdict.latency_s + listed.latency_s,
            verdict.preference,
            verdict.calls + 1,
            verdict.answer_text,
        )
