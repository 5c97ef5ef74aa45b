"""A scripted model written outside moot: ``paris`` always answers Paris. Use it with an agent's
``backend = { kind = "scripted", model = "paris" }`` (or ``--backend scripted --model paris``) after
``plugins = ["paris.py"]``; installed, it is the entry point ``paris`` of the group ``moot.backends``."""

from moot.backends.base import GenerationRequest
from moot.backends.scripted import register_scripted_model


def paris(request: GenerationRequest, index: int) -> str:
    """The reply to ``request``'s sample ``index`` (0 for the first of ``request.n``)."""
    return "The capital is\nParis"


register_scripted_model("paris", paris)
