"""Model registry assembly and verification, on small fake chunk packages made here."""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from moot import models
from moot.errors import ConfigError, ModelError
from moot.models import EmbeddedModel, assemble, resolve_model_path, verify

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def make_package(root: Path, dist: str, version: str, payload: bytes | None) -> None:
    module = dist.replace("-", "_")
    (root / module / "data").mkdir(parents=True)
    (root / module / "__init__.py").write_text("raise ImportError('data packages must not be imported')\n")
    if payload is not None:
        (root / module / "data" / "part.bin").write_bytes(payload)
    info = root / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedModel:
    site = tmp_path / "site"
    for i, chunk in enumerate(CHUNKS, 1):
        make_package(site, f"moot-fake-chunk{i}", "1.0", chunk)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MOOT_CACHE_DIR", str(tmp_path / "cache"))
    data = b"".join(CHUNKS)
    return EmbeddedModel(
        name="fake",
        description="test",
        filename="fake.gguf",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        packages=tuple((f"moot-fake-chunk{i}", "1.0", "data/part.bin") for i in range(1, 4)),
        extra="fake",
    )


def test_assembles_in_order_into_the_cache_and_verifies(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    path = assemble(fake_model)
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert [p.name for p in path.parent.iterdir()] == ["fake.gguf"]  # no part file left beside it
    assert assemble(fake_model) == path  # second call reuses the verified file
    assert "moot_fake_chunk1" not in sys.modules  # located, never imported


def test_missing_package_names_the_package(fake_model: EmbeddedModel) -> None:
    broken = replace(fake_model, packages=(*fake_model.packages, ("moot-fake-chunk9", "1.0", "x")))
    with pytest.raises(ModelError, match=r"moot-fake-chunk9==1.0 is not installed .*needed by model fake"):
        assemble(broken)


def test_wrong_version_and_missing_file_are_named(fake_model: EmbeddedModel) -> None:
    wrong_version = replace(fake_model, packages=(("moot-fake-chunk1", "2.0", "data/part.bin"),))
    with pytest.raises(ModelError, match=r"moot-fake-chunk1 is 1.0, but 2.0 is pinned"):
        assemble(wrong_version)
    missing_file = replace(fake_model, packages=(("moot-fake-chunk1", "1.0", "data/nope.bin"),))
    with pytest.raises(ModelError, match=r"lacks its data file data/nope.bin"):
        assemble(missing_file)


def test_wrong_checksum_is_refused_and_nothing_is_left_behind(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    bad = replace(fake_model, sha256="0" * 64)
    with pytest.raises(ModelError, match="corrupt"):
        assemble(bad)
    assert not (tmp_path / "cache" / "fake.gguf").exists()
    assert not list((tmp_path / "cache").iterdir())


def test_corruption_of_the_cached_file_is_detected(fake_model: EmbeddedModel) -> None:
    path = assemble(fake_model)
    data = bytearray(path.read_bytes())
    data[500] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a changed mtime invalidates the per-process memo
    with pytest.raises(ModelError, match=r"fake: .* has sha256 .* \(corrupt\)"):
        assemble(fake_model)
    path.write_bytes(bytes(data[:100]))
    with pytest.raises(ModelError, match=r"has 100 bytes, expected 1786 \(corrupt or incomplete\)"):
        assemble(fake_model)


def test_verify_checks_size_then_hash(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"hello")
    verify(f, 5, hashlib.sha256(b"hello").hexdigest(), "x")
    models._verified.clear()
    with pytest.raises(ModelError, match="expected 6"):
        verify(f, 6, hashlib.sha256(b"hello").hexdigest(), "x")


def test_any_gguf_path_is_a_model_and_other_files_are_refused(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert resolve_model_path(str(gguf)) == gguf
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF file"):
        resolve_model_path(str(text))
    with pytest.raises(ModelError, match="unknown model 'no-such-model'"):
        resolve_model_path("no-such-model")


def test_a_link_planted_at_the_models_name_is_refused_and_its_target_not_written(
    fake_model: EmbeddedModel, tmp_path: Path
) -> None:
    """A dangling link at the cache's file name (assembly writes there only when nothing is) would have
    written the model wherever it points: refused, the place it points to left as it was."""
    cache = tmp_path / "cache"
    cache.mkdir()
    elsewhere = tmp_path / "elsewhere.gguf"
    (cache / "fake.gguf").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="fake.gguf is a symbolic link; moot never writes through a link"):
        assemble(fake_model)
    assert not elsewhere.exists()
    assert [p.name for p in cache.iterdir()] == ["fake.gguf"]
