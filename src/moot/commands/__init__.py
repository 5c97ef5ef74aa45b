"""The ``moot`` command line's own commands, one module per group (moot.cli mounts them, with the groups
that live beside their packages)."""
