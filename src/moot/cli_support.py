"""What every moot subcommand shares: errors shown as one line."""

from __future__ import annotations

import functools
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from moot.errors import MootError

F = TypeVar("F", bound=Callable[..., Any])


def reports_errors(fn: F) -> F:
    """Turn moot's errors into one line on stderr and exit status 2; Ctrl-C into status 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MootError as exc:
            print(f"moot: error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            print("moot: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def shared_options(options: dict[str, Any]) -> Callable[[F], F]:
    """Give a command the options in ``options`` (parameter name -> typer annotation, every default None),
    declared once for all the commands that share them; the command receives their values as one
    dict, its keyword argument ``shared``."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        own = [p for name, p in signature.parameters.items() if name != "shared"]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
            for name, annotation in options.items()
        ]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            shared = {name: kwargs.pop(name, None) for name in options}
            return fn(*args, shared=shared, **kwargs)

        hints = {k: v for k, v in typing.get_type_hints(fn, include_extras=True).items() if k != "shared"}
        wrapper.__annotations__ = hints | options
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*(p.replace(annotation=hints.get(p.name, p.annotation)) for p in own), *added]
        )
        del wrapper.__wrapped__  # typer reads the signature above, not the wrapped function's
        return wrapper  # type: ignore[return-value]

    return decorate
