"""Theory: the Dirichlet-categorical model of debate (Choi et al. 2025; Zhu et al. 2026, §5), simulated.

``moot.theory.model``: the model and its vectorised simulator (``DebateModel``, ``simulate``);
``experiments``: Monte Carlo estimates and comparisons; ``plots``: the figure; ``engine_bridge``:
agents that follow the model inside moot's real debate engine; ``cli``: the ``moot theory``
commands. Nothing is imported here, so that mounting the commands costs the CLI no numpy import.
"""
