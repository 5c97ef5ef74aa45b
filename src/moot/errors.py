"""Errors that moot reports to a user as one clear line."""

from collections.abc import Iterable

from moot.redact import redact


class MootError(Exception):
    """Base class: the message is meant to be shown to the user as is.

    Its message is redacted when the error is created (moot.redact): a credential that a server echoes
    in an error, or that a URL in the message carries, never reaches a store, a report or the terminal."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigError(MootError):
    """A setting is missing, out of range or unknown."""


class ModelError(MootError):
    """A model cannot be found, assembled or verified."""


class BackendError(MootError):
    """A backend could not produce a reply (server unreachable, bad response...)."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'; did you mean X?' for the known name closest to ``name`` (difflib), or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def unknown_name(what: str, name: str, known: Iterable[str]) -> str:
    """'unknown WHAT 'NAME'; did you mean X?' with the closest known name, else the known names listed."""
    known = list(known)
    hint = did_you_mean(name, known)
    return f"unknown {what} {name!r}" + (hint or f"; known {what}s: {', '.join(known)}")
