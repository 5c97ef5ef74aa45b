"""Debate components, one family per module or folder; every module here is imported by the
registry (moot.debate.registry), so a new rule is one new file."""
