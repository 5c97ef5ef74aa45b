"""Model backends behind one async interface.

- ``local``: llama.cpp in-process (llama-cpp-python) with an embedded GGUF model;
- ``openai``: any OpenAI-compatible server through the official SDK;
- ``scripted``: replays scripted replies, for unit tests of protocol logic.
"""

from moot.backends.base import (
    Backend,
    BackendConfig,
    GenerationRequest,
    Message,
    Reply,
    Sample,
    TokenLogprob,
)
from moot.backends.factory import make_backend

__all__ = [
    "Backend",
    "BackendConfig",
    "GenerationRequest",
    "Message",
    "Reply",
    "Sample",
    "TokenLogprob",
    "make_backend",
]
