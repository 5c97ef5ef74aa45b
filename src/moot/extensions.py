"""Everything registered, in one list: tasks, backend kinds, scripted models and the rules of every component
family, each with where it comes from (moot itself, or the plug-in module that registered it) and its settings.

``moot extensions`` prints it. Listing loads the installed plug-ins (entry points), as any look-up does; files
given with ``moot --plugin`` are loaded before the command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moot.plugins import origin


@dataclass(frozen=True)
class Extension:
    kind: str  # "task", "backend", "scripted model", or a component family ("stopping", "cue", ...)
    name: str
    origin: str  # "moot", or the module of the plug-in that registered it (a file plug-in: its path)
    settings: tuple[tuple[str, Any], ...] = ()  # its parameters and their defaults, where it takes any


def registered() -> list[Extension]:
    """Every registered extension: tasks, backends, scripted models, then each component family's rules, each
    group in registration order."""
    from moot.backends.config import backend_kinds
    from moot.backends.config import settings as backend_settings
    from moot.backends.scripted import scripted_models
    from moot.debate.registry import FAMILIES, parameters, rules
    from moot.tasks import TASKS, load_installed

    load_installed()
    out = [Extension("task", name, origin(factory)) for name, factory in TASKS.items()]
    out += [
        Extension("backend", name, origin(kind), tuple(backend_settings(kind).items()))
        for name, kind in backend_kinds().items()
    ]
    out += [Extension("scripted model", name, origin(responder)) for name, responder in scripted_models().items()]
    for family in FAMILIES:
        out += [
            Extension(family, name, origin(rule), tuple(parameters(rule).items()))
            for name, rule in rules(family).items()
        ]
    return out
