"""Fixtures shared by every test module (tests/integration/conftest.py adds the real model's). Plain helpers
(``run``, ``write_store``, ``arithmetic_experiment``, ``query``) are in tests/helpers.py."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported where used: moot is imported only once pytest_configure has run
    from tests.helpers import WriteRun


def pytest_configure(config: pytest.Config) -> None:
    """No COLUMNS or LINES in the tests' environment, before moot is imported: moot's consoles take COLUMNS, when
    set, over their width for a pipe (moot.cli_output.console_width), and most are made as their module is
    imported. pytest-xdist's workers (``make test-fast``) start with COLUMNS=80 and LINES=24 where a serial run
    has neither, so their tables wrapped where a serial run's did not. A test that wants a width sets it."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.fixture(scope="session")
def write_run(tmp_path_factory: pytest.TempPathFactory) -> WriteRun:
    """Writes a stored run with the scripted backend: ``write_run(folder, experiment, models, file=...,
    **options)`` runs ``experiment`` (a config, or its table) into a new store ``file`` (run.sqlite) in a new
    temporary folder ``folder``N, with the scripted ``models`` (name -> responder) registered for that run only
    and ``RunOptions(**options)``, and returns the store's path. A module's own fixture names its folder, its
    experiment and its models, and keeps the store for its tests::

        @pytest.fixture(scope="module")
        def run(write_run: WriteRun) -> Path:
            return write_run("gains", EXPERIMENT, {"gains": scripted}, file="gains.sqlite")
    """
    from tests.helpers import WriteRun

    return WriteRun(tmp_path_factory)
