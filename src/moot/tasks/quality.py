"""QuALITY: four-choice questions on long articles (Pang et al. 2022).

Source: https://github.com/nyu-mll/quality, release v1.0.1 (QuALITY.v1.0.1.htmlstripped.
{train,dev,test}: JSON lines, one article per line). Licence: per article (mostly Project
Gutenberg public-domain fiction and Slate articles; see each article's "license" field).
Test labels are withheld, so the evaluation split is dev. Not shipped: load a release
file (--data PATH) or the hub conversion emozilla/quality (data 'hub'; flat rows article,
question, options, answer (0-3), hard; its validation split is the release's dev).

v1.0.1 schema used here: article_id, title, article, questions[]: question,
question_unique_id, options (4), gold_label (1-4), difficult (0/1). ``quality-hard``
keeps the questions marked difficult (the HARD subset).
"""

from __future__ import annotations

from moot.tasks.base import DataSource, Question
from moot.tasks.choice import MultipleChoiceTask
from moot.tasks.data import OFFLINE, HubDataset, Row
from moot.tasks.registry import TASKS


class QualityTask(MultipleChoiceTask):
    description = "four-choice questions on long articles (Pang et al. 2022)"
    data_splits = ("dev", "train")
    hub = HubDataset("emozilla/quality", split_names=(("dev", "validation"),))
    licence = "per article (Project Gutenberg public domain, Slate, ...)"
    source_url = "https://github.com/nyu-mll/quality"
    version = "v1.0.1 (htmlstripped)"
    intro = "Read the article below and answer the question that follows it."

    def __init__(self, hard: bool = False, *, source: DataSource = OFFLINE, system_prompt: str | None = None) -> None:
        super().__init__(source=source, system_prompt=system_prompt)
        self.hard = hard
        self.name = "quality-hard" if hard else "quality"

    def not_offline_message(self) -> str:
        return (
            f"task {self.name}: QuALITY is not shipped; load a v1.0.1 release file such as "
            "QuALITY.v1.0.1.htmlstripped.dev (https://github.com/nyu-mll/quality) or the hub (data 'hub')"
        )

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        if self.source.kind == "hub":
            return self._parse_flat(row, split, index)
        title = row.text("title").strip()
        article = row.text("article").strip()
        found = []
        for item in row.rows("questions"):
            if self.hard and not item.boolean("difficult"):
                continue  # not in the HARD subset
            options = item.texts("options", min_count=4, max_count=4)
            gold = item.integer("gold_label")
            if not 1 <= gold <= 4:
                raise item.error("gold_label", f"must be 1-4, got {gold}")
            stem = f"Title: {title}\n\n{article}\n\nQuestion: {item.text('question').strip()}"
            found.append(
                self.choice_question(
                    item,
                    f"quality-{item.text('question_unique_id')}",
                    stem,
                    options,
                    gold - 1,
                    "gold_label",
                    article_id=row.text("article_id"),
                )
            )
        return found

    def _parse_flat(self, row: Row, split: str, index: int) -> list[Question]:
        if self.hard and not row.boolean("hard"):
            return []  # not in the HARD subset
        stem = f"{row.text('article').strip()}\n\nQuestion: {row.text('question').strip()}"
        options = row.texts("options", min_count=4, max_count=4)
        return [self.choice_question(row, f"quality-{split}-{index}", stem, options, row.integer("answer"), "answer")]


TASKS.register("quality", QualityTask)
TASKS.register("quality-hard", lambda: QualityTask(hard=True))
