"""What every moot subcommand shares: errors shown as one line, on output streams that cannot fail with a
traceback."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import sys
import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer

from moot.cli_output import printable
from moot.errors import MootError

F = TypeVar("F", bound=Callable[..., Any])


def print_error(message: str) -> None:
    """``message`` as moot's one line on stderr, made printable (a server's or a file's text may be in it);
    nothing where stderr is closed."""
    if sys.stderr is not None:
        print(f"moot: error: {printable(message)}", file=sys.stderr)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """Run the command line on streams that fail with one line, never a traceback: a closed stdout
    (``moot ... >&-``) is refused with status 2 before anything is done whose output would be lost; a
    failure to write stdout (a full disk, a device error) is one line on stderr and status 2, output still
    buffered failing here, not in Python's flush at exit; a character the encoding lacks
    (``PYTHONIOENCODING=ascii``, a C locale) is printed as its escape, not a UnicodeEncodeError."""
    if sys.stdout is None:
        print_error("standard output is closed")
        sys.exit(2)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    original = sys.stdout
    watched = sys.stdout = _WatchedOutput(original)
    try:
        try:
            yield
        finally:
            sys.stdout = original
            watched.flush()
    except OSError as exc:
        if watched.failed is None:
            raise  # not stdout's failure: moot's own errors are MootErrors
        print_error(f"cannot write standard output: {exc.strerror or exc}")
        with contextlib.suppress(OSError, ValueError):  # what is still buffered goes nowhere at exit, quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), original.fileno())
        sys.exit(2)


class _WatchedOutput:
    """A text stream that keeps the OSError its writes failed with (in ``failed``), so that a failure of
    stdout is told apart from any other OSError; everything else is the stream's."""

    def __init__(self, stream: typing.TextIO) -> None:
        self._stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        return self._watch(self._stream.write, text)

    def flush(self) -> None:
        self._watch(self._stream.flush)

    def _watch(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except OSError as exc:
            self.failed = exc
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def reports_errors(fn: F) -> F:
    """Turn moot's errors into one line on stderr and exit status 2; Ctrl-C into status 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MootError as exc:
            print_error(str(exc))
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


def _reflowed(text: str) -> str:
    """A docstring's paragraphs with their single line breaks joined, so that the terminal wraps them (typer
    keeps a docstring's line breaks after its first paragraph); a paragraph of list items or indented lines
    keeps its lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for p in paragraphs:
        lines = p.split("\n")
        listed = any(line[:1].isspace() or line.lstrip().startswith(("-", "*", "\b")) for line in lines)
        out.append(p if listed else " ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def reflow_help(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its groups) its docstring reflowed as its help text."""
    for command in app.registered_commands:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = _reflowed(command.callback.__doc__)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
