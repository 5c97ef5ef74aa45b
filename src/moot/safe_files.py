"""Files moot writes are never written through a planted link (issue 42).

A symbolic link at a name moot writes (``RUN.report-files/transcripts-0002.html``, ``STORE.lock``,
``RUN.report.html``) could point anywhere, the run store included, and a repository can ship one. So
every file moot writes is looked at without following links (``os.lstat``, ``O_NOFOLLOW``) and refused,
with one line, unless it is absent or the regular file moot expects; a folder moot writes its own
files into (``RUN.report-files``) is refused when it is a link. Only a pipe or a terminal that the user
named (``--out /dev/stdout``: ``stream``) is written into, through its link: it holds no data to lose.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from moot.errors import ConfigError

NOT_THROUGH_LINKS = "moot never writes through a link (a repository can ship one)"


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def is_stream(st: os.stat_result) -> bool:
    """A pipe or a character device (a terminal, /dev/null): written into, never replaced."""
    return stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)


def check_file(path: Path, *, stream: bool = False) -> bool:
    """Refuse (ConfigError) to write the file ``path`` unless it is absent or a regular file, not a link.

    With ``stream`` (a path the user named) a pipe or a character device, or a link to one, is allowed:
    True then, meaning "write into it"; False: write a new file there."""
    st = _lstat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return False
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            target = None
        if stream and target is not None and is_stream(target):
            return True
        raise ConfigError(f"{path} is a symbolic link; {NOT_THROUGH_LINKS}: remove it, or name the file itself")
    if stream and is_stream(st):
        return True
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{path} is a folder; name the output file")
    raise ConfigError(f"{path} is not a regular file (a pipe, a socket or a device); moot writes only regular files")


def check_folder(path: Path) -> None:
    """Refuse (ConfigError) a folder of moot's own (``RUN.report-files``) that is a link."""
    st = _lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ConfigError(
            f"{path} is a symbolic link; {NOT_THROUGH_LINKS}, nor into the folder it points to: remove it"
        )
