"""Running protocols over a task's questions: durable experiments, and in-memory evaluation.

Its names are imported when first used (``moot.lazy``): importing one module of the package
(``moot.runner.store``, which ``moot runs`` reads) loads no other."""

import sys
import types
from typing import TYPE_CHECKING, Any

from moot.lazy import lazy_exports

if TYPE_CHECKING:
    from moot.runner.config import ExperimentConfig
    from moot.runner.config_files import load_experiment, parse_experiment
    from moot.runner.evaluate import EvalResult, build_agents, close_agents, evaluate, uniform_agents
    from moot.runner.experiment import Experiment, run_experiment
    from moot.runner.session import RunOptions, RunOutcome

__all__ = [
    "EvalResult",
    "Experiment",
    "ExperimentConfig",
    "RunOptions",
    "RunOutcome",
    "build_agents",
    "close_agents",
    "evaluate",
    "load_experiment",
    "parse_experiment",
    "run_experiment",
    "uniform_agents",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ExperimentConfig": "moot.runner.config",
        **dict.fromkeys(("load_experiment", "parse_experiment"), "moot.runner.config_files"),
        **dict.fromkeys(
            ("EvalResult", "build_agents", "close_agents", "evaluate", "uniform_agents"), "moot.runner.evaluate"
        ),
        **dict.fromkeys(("Experiment", "run_experiment"), "moot.runner.experiment"),
        **dict.fromkeys(("RunOptions", "RunOutcome"), "moot.runner.session"),
    },
)


class _Package(types.ModuleType):
    """``moot.runner.evaluate`` is the function, as it always was, not the module of the same name that
    importing it would otherwise bind there (the module is ``sys.modules["moot.runner.evaluate"]``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "evaluate" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
