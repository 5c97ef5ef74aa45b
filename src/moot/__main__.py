"""``python -m moot`` runs the command line."""

from moot.cli import main

main()
