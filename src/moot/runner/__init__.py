"""Running protocols over a task's questions."""

from moot.runner.evaluate import EvalResult, build_agents, evaluate, uniform_agents

__all__ = ["EvalResult", "build_agents", "evaluate", "uniform_agents"]
