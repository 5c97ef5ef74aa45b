"""One registry of debate components: every rule of every kind, by family and name.

A component is a frozen pydantic model whose class variable ``family`` names its kind (retention,
stopping, ...) and whose ``kind`` field names the rule. ``@register`` adds it here, where presets,
experiment files and stored runs resolve names: a plain string such as ``"dar"`` means that rule
with its defaults, a table such as ``{kind = "ring", k = 2}`` sets its parameters.

Built-in rules are discovered by importing every module under ``moot.debate.components``, so a new
rule is one new file there. A user's own rule lives in their own file, loaded with ``load_plugin``
(named in an experiment file's ``plugins = [...]``, ``moot --plugin FILE``, or called from Python), or
in an installed package that declares it as an entry point (``moot.plugins``). Loading a file runs it:
an experiment file that names plug-ins must be trusted like a script.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

from moot.errors import ConfigError
from moot.plugins import plugin_code
from moot.registry import FILE_PLUGIN as FILE_PLUGIN
from moot.registry import Registry

FAMILIES = (
    "schedule",
    "topology",
    "history",
    "rendering",
    "initializer",
    "cue",
    "retention",
    "stopping",
    "aggregation",
)


class Component(BaseModel):
    """A rule of one family: owns its parameters, validation, description, needs and behaviour."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: ClassVar[str]
    kind: str
    needs_logprobs: ClassVar[bool] = False  # its agents' calls must return token log-probabilities
    needs_helper: ClassVar[bool] = False  # it calls a helper model (judge, moderator, filter)
    # its behaviour depends on the agents' extracted answers (a vote shown, answers compared): a reading of
    # the replies other than the one the debate ran with re-reads only what is post hoc (moot.analysis.readers)
    reads_answers: ClassVar[bool] = False
    # parameters that older stores wrote for every rule of the family: dropped when they hold this value
    legacy_defaults: ClassVar[dict[str, Any]] = {}

    def describe(self, protocol: Any = None) -> str:
        """What ``moot protocols show`` prints for it (``protocol`` is the ProtocolSpec it is part of)."""
        return self.kind

    def check(self, protocol: Any) -> None:
        """Raise ValueError if it cannot work with the rest of ``protocol`` (a ProtocolSpec)."""

    def check_task(self, task: Any) -> None:
        """Raise ConfigError if it cannot work on ``task`` (a gate trained on another task); called for each task of
        an experiment when its conditions are resolved."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "family" in cls.__dict__:  # the base class of a family
            _BASES[cls.__dict__["family"]] = cls


_BASES: dict[str, type[Component]] = {}


_rules_loaded = False


def _load_rules() -> None:
    """Fill every family's registry, once: moot's own rules (``_discover``), then installed plug-ins' (entry
    points ``moot.components``)."""
    global _rules_loaded
    if _rules_loaded:
        return
    _rules_loaded = True
    from moot.plugins import load_components

    _discover()
    load_components()


_REGISTRY: dict[str, Registry[type[Component]]] = {
    family: Registry(f"{family} rule", load=_load_rules, error=ValueError) for family in FAMILIES
}
_C = TypeVar("_C", bound=type[Component])


def register(cls: _C) -> _C:
    """Class decorator: make a component rule known by its family and ``kind`` default."""
    family = cls.family
    if family not in _REGISTRY:
        raise ValueError(f"unknown component family {family!r}; families: {', '.join(FAMILIES)}")
    kind = cls.__pydantic_fields__["kind"].default
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{cls.__name__} needs a default kind, e.g. kind: Literal['mine'] = 'mine'")
    _REGISTRY[family].register(kind, cls)
    return cls


BUILT_IN = ("moot.debate.components", "moot.debate.schedules")  # the packages whose modules hold moot's own rules


def _discover() -> None:
    """Import every module of the ``BUILT_IN`` packages once (each registers the rules it defines, where it
    defines them): found on disk, imported by name, so this registry imports no rule's module itself."""
    for package in BUILT_IN:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            raise RuntimeError(f"moot's component package {package} is missing")
        importlib.import_module(package)
        for info in pkgutil.walk_packages(spec.submodule_search_locations, package + "."):
            importlib.import_module(info.name)


def rules(family: str) -> Registry[type[Component]]:
    """The registered rules of ``family``, by name (the first look-up of any family imports moot's own rules and
    installed plug-ins')."""
    _REGISTRY[family].loaded()
    return _REGISTRY[family]


def parameters(rule: type[Component]) -> dict[str, Any]:
    """A rule's parameters and their defaults (what `moot protocols components` lists)."""
    return {name: field.default for name, field in rule.__pydantic_fields__.items() if name != "kind"}


def parse(family: str, value: Any, stored: bool = False) -> Component:
    """A component from a rule name, a mapping with ``kind``, or an instance; errors name the choices.

    ``stored``: reading a stored run, where a rule from a plug-in that is not loaded is kept as an
    ``Unregistered`` record of its name and parameters (enough to report on, not to run)."""
    if isinstance(value, Component):
        if value.family != family:
            raise ValueError(f"a {value.family} rule ({value.kind!r}) given as {family}")
        return value
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        raise ValueError(f"a {family} rule is a name or a table with a kind, got {value!r}")
    known = rules(family)
    kind = value.get("kind")
    if kind not in known and stored and isinstance(kind, str):
        return _unregistered(family).model_validate(value)
    if kind not in known:
        raise ValueError(f"unknown {family} rule {kind!r}; known: {', '.join(known)}")
    assert isinstance(kind, str)
    rule = known[kind]
    value = {k: v for k, v in value.items() if k in rule.model_fields or rule.legacy_defaults.get(k, _ABSENT) != v}
    return rule.model_validate(value)


_ABSENT = object()


def rule(family: str) -> BeforeValidator:
    """Annotate a field holding a ``family`` rule: ``Annotated[SerializeAsAny[Stopping], rule("stopping")]``
    parses a name, a table or an instance; SerializeAsAny dumps the rule's own parameters."""
    return BeforeValidator(lambda value, info: parse(family, value, stored=bool((info.context or {}).get("stored"))))


STORED = {"stored": True}  # validation context for configurations read back from a run store


class Unregistered(Component):
    """A rule read from a stored run whose plug-in is not loaded: its name and parameters only."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def check(self, protocol: Any) -> None:
        return None


_UNREGISTERED: dict[str, type[Unregistered]] = {}


def _unregistered(family: str) -> type[Unregistered]:
    if family not in _UNREGISTERED:
        base = _BASES[family]
        _UNREGISTERED[family] = type(
            f"Unregistered{base.__name__}",
            (Unregistered, base),
            {"model_config": ConfigDict(frozen=True, extra="allow")},
        )
    return _UNREGISTERED[family]


def plugin_file(path: str | Path) -> Path:
    """The plug-in file ``path`` names, resolved; a ConfigError when there is none. Runs nothing."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"plugin {path}: no such file")
    return file


def load_plugin(path: str | Path) -> None:
    """Import a user's Python file so that the rules it ``@register``s can be named (idempotent). This runs
    the file: load only files you trust. Whatever it raises while loading (SystemExit included, but not
    KeyboardInterrupt) is a ConfigError naming it, and it is not loaded."""
    file = plugin_file(path)
    name = FILE_PLUGIN + "".join(c if c.isalnum() else "_" for c in str(file))
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"plugin {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with plugin_code(f"plugin {path}"):
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


TEMPLATES: dict[str, Callable[..., Any]] = {}
_F = TypeVar("_F", bound=Callable[..., Any])


def template(function: _F) -> _F:
    """Mark a function that renders prompt text: its source is hashed into every run's metadata, so a
    changed prompt changes the hashes a run records."""
    TEMPLATES[f"{function.__module__.removeprefix('moot.')}.{function.__qualname__}"] = function
    return function


def template_hashes() -> dict[str, str]:
    """sha256 of the source of every prompt template, every registered rule (whose class holds its prompt
    wording, such as a filter's criterion) and every registered task's classes (their question and debate
    wording, their reading of replies), wherever they live: what a run records so that a changed prompt shows.
    Every module that registers one is imported first, so the result does not depend on what was imported
    before the call."""
    import hashlib
    import inspect

    from moot.tasks import TASKS, load_installed, new_task
    from moot.tasks.datafile import FILE_FORMATS

    by_family = {family: rules(family) for family in FAMILIES}  # imports every rule's module, and its templates
    load_installed()
    sources = {name: inspect.getsource(function) for name, function in TEMPLATES.items()}
    for family, found in by_family.items():
        for kind, cls in found.items():
            sources[f"{family}:{kind}"] = inspect.getsource(cls)
    task_classes = [factory if isinstance(factory, type) else type(new_task(name)) for name, factory in TASKS.items()]
    for task_class in [*task_classes, *FILE_FORMATS.values()]:  # a data file's formats
        for cls in task_class.__mro__:
            if cls.__module__ not in ("builtins", "abc", "typing"):
                sources[f"task:{cls.__module__}.{cls.__qualname__}"] = inspect.getsource(cls)
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(sources.items())}
