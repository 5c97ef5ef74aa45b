"""Running protocols over a task's questions: durable experiments, and in-memory evaluation."""

from moot.runner.config import ExperimentConfig, load_experiment, parse_experiment
from moot.runner.evaluate import EvalResult, build_agents, close_agents, evaluate, uniform_agents
from moot.runner.experiment import Experiment, RunOptions, RunOutcome, run_experiment

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
