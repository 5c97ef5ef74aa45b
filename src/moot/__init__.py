"""moot: multi-agent debate with language models.

The public surface is small: backends (how a model is called), tasks (what is
asked and how a reply is scored), and the debate engine (who says what, when).
For a notebook or a script: ``moot.open`` (a stored run as DataFrames), ``moot.compare``
(the paired comparison ``moot compare`` prints) and ``moot.run`` (an experiment run
synchronously); they load on first use (``moot.lazy``).
"""

from typing import TYPE_CHECKING

from moot.lazy import lazy_exports

__version__ = "0.1.0"

__all__ = ["__version__", "compare", "open", "run"]

if TYPE_CHECKING:
    from moot.frames import compare, open
    from moot.running import run

__getattr__, __dir__ = lazy_exports(__name__, {"open": "moot.frames", "compare": "moot.frames", "run": "moot.running"})
