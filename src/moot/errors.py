"""Errors that moot reports to a user as one clear line."""


class MootError(Exception):
    """Base class: the message is meant to be shown to the user as is."""


class ConfigError(MootError):
    """A setting is missing, out of range or unknown."""


class ModelError(MootError):
    """A model cannot be found, assembled or verified."""


class BackendError(MootError):
    """A backend could not produce a reply (server unreachable, bad response...)."""
