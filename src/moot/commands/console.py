"""The console every command of moot.commands prints on (and moot.cli's --version)."""

from __future__ import annotations

from moot.cli_output import make_console

# Piped output (logs, CI) gets a wide fixed width instead of 80 columns, unless COLUMNS says otherwise.
console = make_console(piped=140)
