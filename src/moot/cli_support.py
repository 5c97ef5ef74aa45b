"""What every moot subcommand shares: errors shown as one line."""

from __future__ import annotations

import functools
import sys
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
