"""An example moot plug-in package (see pyproject.toml's entry points)."""
