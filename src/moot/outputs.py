"""What moot's output files (reports, exports, plots) may be written over.

An output file is written:

- where no file is;
- over an earlier output at moot's own default name for it (beside the run: ``RUN.report.html``,
  ``RUN.TABLE.FORMAT``; ``theory.png`` in the working folder): those names are moot's;
- over any other existing file only with ``--force``.

Never, even with ``--force``: over the run being read, over a run store or any other SQLite
database (recognised by its header, whatever its name), over a store's ``-wal``, ``-shm``,
``-journal`` or ``.lock`` file, over a folder, or through a symbolic link (``moot.safe_files``: a
link is refused, whatever it points to; only a pipe or terminal the user named is written into).
Every check is made before any work is done, and the link check again when the file is written.

A file is written whole or not at all, through a part file beside it (``.NAME.XXXXXXXX.part``); the part
file a write killed mid-way left is removed by the next write of that output (``clear_stale_parts``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from moot.errors import ConfigError, MootError
from moot.safe_files import check_file

SQLITE_HEADER = b"SQLite format 3\x00"
STORE_FILES = ("-wal", "-shm", "-journal", ".lock")  # what SQLite and moot keep beside a store
# a part file unchanged for this long was left by a killed write: a live one is written in seconds (an
# export's rows, a report's pages are read before or as it is written, each page of bounded size)
STALE_PART_S = 600.0


def is_database(path: Path) -> bool:
    """True for an SQLite database file (a run store or any other), by its first 16 bytes. A pipe or a
    terminal is not read (reading one waits for input that never comes): it is no database."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: Path, *, force: bool = False, default: bool = False, reading: Path | None = None, stream: bool = False
) -> bool:
    """Refuse (ConfigError) to write an output file at ``path`` where the rules above forbid it; True when
    ``path`` is a pipe or terminal to write into, False when a file is written there.

    ``default``: ``path`` is moot's default name for this output; ``reading``: the run being read;
    ``stream``: a pipe or terminal at ``path`` (the user named it) is written into."""
    never = "moot never writes over a run store, even with --force; choose another output file"
    if reading is not None and _same(path, reading):
        raise ConfigError(f"{path} is the run being read; {never}")
    if path.is_dir():
        raise ConfigError(f"{path} is a folder; name the output file")
    if is_database(path):
        raise ConfigError(f"{path} is a run store (an SQLite database); {never}")
    for suffix in STORE_FILES:
        if path.name.endswith(suffix) and is_database(path.with_name(path.name[: -len(suffix)])):
            raise ConfigError(f"{path} belongs to the run store beside it; {never}")
    if check_file(path, stream=stream and not default):  # refuses a link (even with --force), a device, a socket
        return True  # a pipe or terminal the user named: written into, nothing to replace
    if (path.exists() or path.is_symlink()) and not (force or default):
        raise ConfigError(f"{path} exists and moot did not write it there; pass --force to replace it")
    return False


def write_output(path: Path, write: Callable[[Path], object], *, stream: bool = False) -> Path:
    """Write an output file whole or not at all: ``write`` fills a new temporary file beside ``path``,
    which then replaces it, so a full disk or a kill leaves any earlier file as it was. A link at
    ``path`` is refused (``moot.safe_files``); with ``stream`` (a path the user named), a pipe or
    terminal is written into. An OS fault is a MootError."""
    try:
        if check_file(path, stream=stream):  # /dev/stdout, a pipe: write into it
            with _reader_of(path):
                write(path)
            return path
        clear_stale_parts(path)
        # a new name, created O_EXCL | O_NOFOLLOW (tempfile's flags): never an existing file or a link
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise MootError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        os.chmod(temporary, 0o666 & ~_umask())
        # rename() replaces the name ``path`` itself: a link planted there since the check above is
        # replaced, not written through (its target is untouched), and a hard link's other names keep
        # the earlier file
        os.replace(temporary, path)
    except OSError as exc:
        raise MootError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return path


def open_pipe(path: Path) -> int | None:
    """A write end of the named pipe at ``path``, opened without waiting for a reader (opening it to write
    blocks until one comes, for ever if none does): a ConfigError where it has none; None for anything else."""
    if not stat.S_ISFIFO(path.stat().st_mode):
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ConfigError(f"{path} is a named pipe with no reader; start its reader first") from None
        raise


@contextlib.contextmanager
def _reader_of(path: Path) -> Iterator[None]:
    """A named pipe's reader checked (``open_pipe``) and its write end kept open while ``write`` opens it again."""
    probe = open_pipe(path)
    try:
        yield
    finally:
        if probe is not None:
            os.close(probe)


def clear_stale_parts(target: Path) -> None:
    """Remove the part files that writes of ``target`` killed mid-way left beside it: regular files named
    as ``write_output`` names its temporary file (``.NAME.XXXXXXXX.part``) and unchanged for
    ``STALE_PART_S``, so that one another process is writing now is left alone. A kill cannot clean up
    after itself; the next write does."""
    pattern = re.compile(re.escape(f".{target.name}.") + r"[a-z0-9_]{8}\.part")
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_PART_S:
                    os.unlink(entry.path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
