"""The options `moot run` and `moot ask` share (and `moot protocols show`'s --agents and --rounds)."""

from __future__ import annotations

from typing import Annotated

import typer

# Options shared by `run` and `ask`. None means "not given": the library default applies,
# and `run EXPERIMENT.toml` can tell that no option competes with the file.
Agents = Annotated[
    int | None, typer.Option("--agents", "-n", help="Number of agents (default: the preset's; at most 64).")
]
Rounds = Annotated[
    int | None, typer.Option("--rounds", "-r", help="Rounds, counting round 0 (default: the preset's; at most 50).")
]
TieRuleOpt = Annotated[
    str | None,
    typer.Option(help="Majority tie rule: first (earliest agent, default), random (seeded), abstain."),
]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        "-b",
        help="A backend kind: local (llama.cpp's server, managed by moot; default), vllm (vLLM's server, managed "
        "by moot; its Python from $MOOT_VLLM_PYTHON), llama-cpp (in-process), "
        "openai (any server), hf (transformers in-process, with an optional --adapter; see docs/hf-backend.md), "
        "scripted (scripted replies, no model) or a plug-in's; `moot backends` lists every registered kind.",
    ),
]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="local, llama-cpp: a registered model (see `moot models list`) or a GGUF path (default: qwen2.5-1.5b); "
        "openai: the served model name (default: the server's only model); "
        "hf: those, a Hugging Face model folder or a hub id.",
    ),
]
Adapter = Annotated[
    str | None, typer.Option(help="hf: a peft (LoRA) adapter folder, e.g. the adapter `moot train` saves.")
]
BaseUrl = Annotated[
    list[str] | None,
    typer.Option(
        help="openai: server URL, e.g. http://127.0.0.1:8080/v1; repeat it for several endpoints serving the "
        "same model (requests go to the least busy one)."
    ),
]
ApiKeyEnv = Annotated[
    str | None, typer.Option(help="openai: environment variable holding the API key (default: OPENAI_API_KEY).")
]
Temperature = Annotated[float | None, typer.Option(help="Sampling temperature of every agent (default: 0.7).")]
TopP = Annotated[float | None, typer.Option(help="Nucleus sampling top_p of every agent (default: 1.0).")]
MaxTokens = Annotated[int | None, typer.Option(help="Maximum tokens per reply (default: 512).")]
Seed = Annotated[int | None, typer.Option(help="Seed of the run and of question selection (default: 0).")]
SystemPrompt = Annotated[
    str | None,
    typer.Option(help="System prompt of every agent (default: the task's; an empty string for none)."),
]
Threads = Annotated[
    int | None, typer.Option(help="local, llama-cpp, hf, vllm (its CPU build): CPU threads (default: all cores).")
]
Context = Annotated[
    int | None,
    typer.Option(help="local, llama-cpp, vllm: context window in tokens, per slot (default: 8192)."),
]


Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A component setting, KEY=VALUE as in an experiment file's condition, repeatable: "
        "--set retention=dar --set 'stopping={kind=\"consensus\", fraction=0.6}' (see `moot protocols components`; "
        "a diverse initialiser's pool_size is at most 256).",
    ),
]

# Declared once, for `run` and `ask` (moot.runner.options.AgentOptions validates them by type).
SHARED = {
    "agents": Agents,
    "rounds": Rounds,
    "tie_rule": TieRuleOpt,
    "backend": Backend,
    "model": Model,
    "adapter": Adapter,
    "base_url": BaseUrl,
    "api_key_env": ApiKeyEnv,
    "temperature": Temperature,
    "top_p": TopP,
    "max_tokens": MaxTokens,
    "seed": Seed,
    "system_prompt": SystemPrompt,
    "threads": Threads,
    "context": Context,
    "settings": Settings,
}
