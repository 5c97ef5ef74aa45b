"""Models through transformers: a causal LM and its tokenizer, with an optional peft (LoRA) adapter.

What the ``hf`` backend (moot.backends.hf) and the GRPO driver (moot.training.grpo) both load. A model is
named as everywhere in moot: a registered name (its GGUF, dequantised by transformers' ``gguf_file``
support, which needs the ``gguf`` package), a GGUF file, a local Hugging Face folder, or a hub id (for
online users). Nothing is cached here: each call loads afresh, and the caller owns what it gets.
Every failure is one ConfigError line: an unknown model, a missing adapter, a model or adapter the
installed libraries cannot load.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from moot.errors import ConfigError, MootError, did_you_mean

if TYPE_CHECKING:
    import torch

Dtype = Literal["auto", "float32", "bfloat16", "float16"]
DTYPES: tuple[Dtype, ...] = ("auto", "float32", "bfloat16", "float16")
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
INSTALL_HINT = "pip install 'moot[hf]'"


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights are, and its identity in stored calls.

    ``location`` is what ``from_pretrained`` reads (a folder or a hub id); ``gguf_file`` the GGUF inside
    that folder, if the weights are one; ``identity`` is ``gguf:<sha256>`` for a GGUF (as the llama.cpp
    backends name it), else the folder's absolute path or the hub id.
    """

    name: str
    location: str
    gguf_file: str | None
    identity: str

    @property
    def is_gguf(self) -> bool:
        return self.gguf_file is not None


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to generate or train (adapter applied when one is given), and its tokenizer."""

    model: Any  # transformers.PreTrainedModel, or a peft.PeftModel around one
    tokenizer: Any  # transformers.PreTrainedTokenizerBase
    source: ModelSource
    adapter: Path | None
    device: str


def resolve_source(name: str) -> ModelSource:
    """The weights a model name stands for, without loading them; a ConfigError for a name that is none.

    A registered name or an existing GGUF file is a GGUF; an existing folder is a Hugging Face folder; a
    path-like name that does not exist, or a near-miss of a registered name, is refused here; any other
    name is taken as a hub id (which only loading can check)."""
    from moot.models import REGISTRY, assemble, sha256_of

    if name in REGISTRY:
        try:
            path = assemble(REGISTRY[name])
        except MootError as exc:
            raise ConfigError(str(exc)) from None
        return ModelSource(name, str(path.parent), path.name, f"gguf:{REGISTRY[name].sha256}")
    path = Path(name).expanduser()
    if path.is_file():
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ConfigError(f"model {name!r} is a file but not a GGUF file; give a GGUF or a model folder")
        return ModelSource(name, str(path.resolve().parent), path.name, f"gguf:{sha256_of(path)}")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"model folder {name!r} has no config.json: not a Hugging Face model folder")
        return ModelSource(name, str(path.resolve()), None, str(path.resolve()))
    if _looks_like_path(name) or ("/" not in name and did_you_mean(name, REGISTRY)):
        raise ConfigError(unknown_model(name))
    return ModelSource(name, name, None, name)


def _looks_like_path(name: str) -> bool:
    """A name no hub id has: a relative or absolute path, a GGUF file name, more than owner/name."""
    return name.startswith((".", "/", "~")) or name.endswith(".gguf") or name.count("/") > 1 or "\\" in name


def unknown_model(name: str) -> str:
    """The message for a model that is not registered, not a file or folder, and not a hub id."""
    from moot.models import REGISTRY

    hint = did_you_mean(name, REGISTRY)
    known = "" if hint else f" ({', '.join(sorted(REGISTRY))})"
    return (
        f"unknown model {name!r}: not a registered model{known}, a GGUF file, a model folder "
        f"nor a Hugging Face hub id{hint}"
    )


def check_adapter(adapter: str | Path) -> Path:
    """The folder of a peft adapter (its adapter_config.json and weights), or a ConfigError saying what is missing."""
    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"adapter {str(adapter)!r} not found: give the folder of a peft adapter (adapter_config.json)"
        )
    if not (path / ADAPTER_CONFIG).is_file():
        raise ConfigError(f"adapter folder {str(adapter)!r} has no {ADAPTER_CONFIG}: not a peft adapter")
    if adapter_weights(path) is None:
        raise ConfigError(f"adapter folder {str(adapter)!r} has no weights ({' or '.join(ADAPTER_WEIGHTS)})")
    return path


def adapter_weights(folder: Path) -> Path | None:
    """The adapter's weights file in ``folder``, if there is one."""
    return next((folder / f for f in ADAPTER_WEIGHTS if (folder / f).is_file()), None)


def adapter_identity(adapter: str | Path) -> str:
    """``adapter:<sha256 of the weights file>``: what tells an adapted model's stored calls from the base's."""
    weights = adapter_weights(check_adapter(adapter))
    assert weights is not None  # check_adapter refuses a folder without weights
    digest = hashlib.sha256()
    with weights.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return f"adapter:{digest.hexdigest()}"


def model_identity(source: ModelSource, adapter: str | Path | None) -> str:
    """A model's identity in stored calls: the base's, plus ``+adapter:<sha256>`` when adapted."""
    return source.identity if adapter is None else f"{source.identity}+{adapter_identity(adapter)}"


def pick_device(device: str | None = None) -> str:
    """The device to run on: the one given, else cuda when there is one, else cpu."""
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(dtype: Dtype, device: str) -> torch.dtype:
    """The torch dtype of ``dtype``; ``auto`` is float32 on CPU (bfloat16 is slow there) and bfloat16 on a GPU
    that has it."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def require_libraries(*modules: str) -> None:
    """A ConfigError naming the extra to install when one of ``modules`` cannot be imported."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"the hf backend needs {', '.join(missing)}: {INSTALL_HINT}")


def load_tokenizer(source: ModelSource) -> Any:
    """The model's tokenizer (from the GGUF's metadata for a GGUF), with a pad token and left padding."""
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    try:
        tokenizer = _quietly(lambda: AutoTokenizer.from_pretrained(source.location, **kwargs))
    except Exception as exc:
        raise ConfigError(_cannot_load("the tokenizer of", source, exc)) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_base_model(source: ModelSource, *, dtype: Dtype = "auto", device: str | None = None) -> Any:
    """The causal LM of ``source`` on ``device``, in ``dtype`` (a GGUF is dequantised to it)."""
    require_libraries("torch", "transformers", *(("gguf",) if source.is_gguf else ()))
    from transformers import AutoModelForCausalLM

    where = pick_device(device)
    kwargs: dict[str, Any] = {"dtype": torch_dtype(dtype, where)}
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    try:
        model = _quietly(lambda: AutoModelForCausalLM.from_pretrained(source.location, **kwargs))
    except Exception as exc:
        raise ConfigError(_cannot_load("", source, exc)) from None
    if source.gguf_file:
        # The weights are dequantised into plain tensors; transformers still marks the model as quantized
        # by "gguf", which stops it being saved (a folder, a full checkpoint) and trained (the Trainer
        # refuses a quantized model). Unmark it the library's way.
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:
            quantizer.remove_quantization_config(model)
    return model.to(where)


def load_model(
    name: str,
    *,
    adapter: str | Path | None = None,
    dtype: Dtype = "auto",
    device: str | None = None,
    trainable: bool = False,
) -> LoadedModel:
    """Model + tokenizer for ``name``, with the peft adapter at ``adapter`` applied (trainable when asked:
    a stage that continues training it); in eval mode unless trainable."""
    require_libraries("torch", "transformers")
    adapter_dir = None if adapter is None else check_adapter(adapter)
    source = resolve_source(name)
    tokenizer = load_tokenizer(source)
    model = load_base_model(source, dtype=dtype, device=device)
    if adapter_dir is not None:
        model = apply_adapter(model, adapter_dir, trainable=trainable)
    if not trainable:
        model.eval()
    return LoadedModel(model, tokenizer, source, adapter_dir, pick_device(device))


def apply_adapter(model: Any, adapter: Path, *, trainable: bool = False) -> Any:
    """``model`` with the peft adapter in the folder ``adapter``; a ConfigError when it does not fit the model."""
    require_libraries("peft")
    from peft import PeftModel

    try:
        return _quietly(lambda: PeftModel.from_pretrained(model, str(adapter), is_trainable=trainable))
    except Exception as exc:
        reason = _reason(exc)
        raise ConfigError(f"could not apply the adapter {str(adapter)!r} to the model: {reason}") from None


def _cannot_load(what: str, source: ModelSource, exc: Exception) -> str:
    target = f"{source.location}/{source.gguf_file}" if source.gguf_file else source.location
    subject = f"{what} model {source.name!r}".strip() if what else f"model {source.name!r}"
    where = "" if target == source.name else f" ({target})"
    return f"transformers could not load {subject}{where}: {_reason(exc)}"


def _reason(exc: Exception) -> str:
    """The first sentence-sized part of an exception's message, on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _quietly(load: Any) -> Any:
    """Run ``load`` with transformers' and hub's progress bars and info logs off (a terminal stays moot's),
    and the libraries' deprecation notices to each other (peft's use of a renamed transformers method) unsaid;
    the GGUF converter's own tqdm bar, which ignores transformers' switch, is turned off for the call."""
    import functools
    import warnings

    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    converter_bar = gguf_utils.tqdm
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    gguf_utils.tqdm = functools.partial(converter_bar, disable=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return load()
    finally:
        gguf_utils.tqdm = converter_bar
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def hf_folder(name: str) -> tuple[Path | str, str]:
    """What a server that reads Hugging Face folders (vLLM) loads for ``name``, and the model's identity: a
    GGUF (a registered name or a file) is dequantised once into a folder under the model cache
    (``<cache>/hf/<sha256 of the GGUF>``: float32 safetensors and the tokenizer, so the weights are the
    GGUF's exactly), reused after; a folder or a hub id is given as it is. Needs ``moot[hf]`` for a GGUF."""
    from moot.models import cache_dir

    source = resolve_source(name)
    if not source.is_gguf:
        return (Path(source.location) if Path(source.location).is_dir() else source.location), source.identity
    target = cache_dir() / "hf" / source.identity.removeprefix("gguf:")
    if not (target / "config.json").is_file():
        export_folder(name, target)
    return target, source.identity


def export_folder(name: str, target: Path, dtype: Dtype = "float32") -> Path:
    """Save ``name``'s model (a GGUF dequantised to ``dtype``) and tokenizer as a Hugging Face folder at
    ``target``, written beside it and renamed into place, so that a folder there is always whole."""
    import shutil
    import tempfile

    loaded = load_model(name, dtype=dtype, device="cpu")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _quietly(lambda: loaded.model.save_pretrained(partial))
        loaded.tokenizer.save_pretrained(partial)
        if target.exists():
            shutil.rmtree(target)
        partial.rename(target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return target
