"""The task catalogue behind `moot tasks`: every registered task's card, with the sizes available offline,
its licence, metric and source."""

from __future__ import annotations

from dataclasses import replace

from moot.tasks import TASKS
from moot.tasks.base import TaskCard

# the parametrised form of a registered name, shown beside it
_FORMS = {
    "mmlu": "mmlu:<subject>,...",
    "chess-move": "chess-move:<depth>",
    "hh-rlhf": "hh-rlhf:<subset>",
    "gsm8k": "gsm8k:math-verify",
    "knights": "knights:<n>",
}


def catalog() -> list[TaskCard]:
    """One card per registered task, in registry order (parametrised forms noted in the name); installed
    plug-ins' tasks included."""
    from moot.tasks import load_installed, new_task

    load_installed()
    cards = []
    for name in TASKS:
        card = new_task(name).card()
        if name in _FORMS:
            card = replace(card, name=f"{name} (or {_FORMS[name]})")
        cards.append(card)
    return cards
