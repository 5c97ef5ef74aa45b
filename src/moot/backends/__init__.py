"""Model backends behind one async interface.

- ``local``: llama.cpp's server (llama-server), started and stopped by moot, with an embedded GGUF model;
- ``llama-cpp``: llama.cpp in-process (llama-cpp-python), one call at a time;
- ``openai``: any OpenAI-compatible server through the official SDK;
- ``hf``: transformers in-process, with an optional peft adapter;
- ``scripted``: replays scripted replies, for unit tests of protocol logic.

Each kind has its own config (moot.backends.config), registered with ``register_backend`` (a plug-in adds
its own kind the same way); ``backend_kinds`` lists them and ``make_backend`` builds one.
"""

from moot.backends.base import (
    Backend,
    GenerationRequest,
    Message,
    Reply,
    Sample,
    TokenLogprob,
)
from moot.backends.config import (
    BackendConfig,
    BackendSettings,
    HFBackendConfig,
    LlamaCppBackendConfig,
    LocalBackendConfig,
    OpenAIBackendConfig,
    ScriptedBackendConfig,
    backend_kinds,
    default_backend,
    parse_backend,
    register_backend,
)
from moot.backends.factory import make_backend

__all__ = [
    "Backend",
    "BackendConfig",
    "BackendSettings",
    "register_backend",
    "backend_kinds",
    "HFBackendConfig",
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
