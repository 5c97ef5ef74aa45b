"""Model backends behind one async interface.

- ``local``: llama.cpp's server (llama-server), started and stopped by moot, with an embedded GGUF model;
- ``llama-cpp``: llama.cpp in-process (llama-cpp-python), one call at a time;
- ``openai``: any OpenAI-compatible server through the official SDK;
- ``scripted``: replays scripted replies, for unit tests of protocol logic.

Each kind has its own config (moot.backends.config); ``make_backend`` builds it.
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
from moot.backends.config import (
    LlamaCppBackendConfig,
    LocalBackendConfig,
    OpenAIBackendConfig,
    ScriptedBackendConfig,
    default_backend,
    parse_backend,
)
from moot.backends.factory import make_backend

__all__ = [
    "Backend",
    "BackendConfig",
    "LocalBackendConfig",
    "LlamaCppBackendConfig",
    "OpenAIBackendConfig",
    "ScriptedBackendConfig",
    "parse_backend",
    "default_backend",
    "GenerationRequest",
    "Message",
    "Reply",
    "Sample",
    "TokenLogprob",
    "make_backend",
]
