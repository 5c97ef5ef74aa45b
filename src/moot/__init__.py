"""moot: multi-agent debate with language models.

The public surface is small: backends (how a model is called), tasks (what is
asked and how a reply is scored), and the debate engine (who says what, when).
"""

__version__ = "0.1.0"
