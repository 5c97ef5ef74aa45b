"""Lazy re-exports for package ``__init__`` modules (PEP 562), so that importing one module of a package
(``moot.runner.store`` for ``moot runs``) does not load every other module it re-exports.

    __getattr__, __dir__ = lazy_exports(__name__, {"run_experiment": "moot.runner.experiment", ...})

A name is imported from its module the first time it is asked for, then kept in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module ``__getattr__`` and ``__dir__`` for ``names`` (name -> the module defining it)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
