"""A run's exclusive hold on its store (``StoreLock``): an OS lock on ``STORE.lock`` beside it, which dies
with the process, and ``lock_holder``, which a reader asks whether a run holds a store (and which PID).

The hold is on the store's identity, not on the name a run was given: STORE.lock lies beside the file a
symbolic link names, and the store file itself is locked too (``flock`` on its inode, which every name and
hard link of it shares), so a run through another name of a held store is refused before any call. A
link or anything but moot's own regular file at STORE.lock is refused, never written through."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from pathlib import Path

from moot.runner.store.errors import StoreError
from moot.safe_files import NOT_THROUGH_LINKS

# the lock file is opened without following a link (O_NOFOLLOW), nor waiting on a pipe (O_NONBLOCK)
_LOCK_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def lock_path(store: Path) -> Path:
    """The lock file of a store: STORE.lock beside it (beside the file itself, when ``store`` is a symbolic
    link or is reached through one), present while a run holds the store."""
    real = Path(os.path.realpath(store))
    return real.with_name(real.name + ".lock")


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode("ascii", "replace").strip() or 0)
    except (OSError, ValueError):
        return 0


def in_use(store: Path, pid: int) -> StoreError:
    """The error of a store another run holds (``pid``: its PID; 0 when it has not written it yet)."""
    holder = f"PID {pid}" if pid else "another process"
    return StoreError(f"{store} is in use by another moot run ({holder}); wait for it to end, or stop it")


def lock_holder(store: Path) -> int | None:
    """The PID of the process holding ``store`` (0: one holds it but has not written its PID yet), or
    None when none does. Creates nothing: a store without a lock file is not held."""
    try:
        fd = os.open(lock_path(store), os.O_RDONLY | _LOCK_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class StoreLock:
    """A run's exclusive hold on its store: ``flock`` on STORE.lock, which holds the PID, and on the
    store file itself (its identity: a hard link is another name of the same inode).

    The OS releases the lock when the process ends, however it ends, so a store left by a killed
    run is free; ``release`` removes the file. ``acquire`` waits ``wait_s`` at most (a reader's
    check, ``lock_holder``, holds it for a moment) and then raises a StoreError naming the holder.
    A store that does not exist yet is locked by ``hold_store`` once it is created (``RunStore.create``)."""

    def __init__(self, store: Path, wait_s: float = 1.0):
        self.store = store
        self.path = lock_path(store)
        self.wait_s = wait_s
        self._fd: int | None = None
        self._store_fd: int | None = None  # flock on the store file itself, once it exists

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _LOCK_FLAGS, 0o644)
            except OSError as exc:
                if os.path.islink(self.path):  # ELOOP (EMLINK on some BSDs): a link planted at STORE.lock
                    raise StoreError(self._planted("is a symbolic link; " + NOT_THROUGH_LINKS)) from None
                if exc.errno == errno.EISDIR:
                    raise StoreError(self._planted("is a folder")) from None
                if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise StoreError(
                        f"cannot write {self.store}: its folder is read-only (a run keeps its .lock, -wal and "
                        "-shm files beside the store)"
                    ) from None
                raise StoreError(
                    f"cannot lock {self.store}: cannot create {self.path.name} beside it ({exc.strerror})"
                ) from None
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:  # checked before a byte is written
                os.close(fd)
                kind = "is not a regular file" if not stat.S_ISREG(found.st_mode) else "has other hard links"
                raise StoreError(self._planted(f"{kind}, not moot's own lock file"))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise in_use(self.store, pid) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            # its last holder may have removed the file between our open and our lock: lock the file there now
            try:
                there = os.lstat(self.path)
                same = (there.st_dev, there.st_ino) == (found.st_dev, found.st_ino)
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                self._hold_store(deadline)  # the store's identity: held through any other name of it
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)  # ours while we hold it, as in release
                os.close(fd)
                raise
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError as exc:
                os.close(fd)
                self._let_go_of_store()
                if exc.errno == errno.ENOSPC:
                    raise StoreError(f"cannot lock {self.store}: the disk is full") from None
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            self._fd = fd
            return

    def _planted(self, what: str) -> str:
        return f"cannot lock {self.store}: {self.path} {what}; remove it"

    def hold_store(self) -> None:
        """Lock the store file itself, now that it exists (a run that created it); a StoreError when
        another run holds it through another name. Nothing when the lock is not held or the store is."""
        if self._fd is not None:
            self._hold_store(time.monotonic() + self.wait_s)

    def _hold_store(self, deadline: float) -> None:
        """``flock`` on the store file, shared by all its names (links, hard links), waiting until
        ``deadline``. A store that does not exist yet, or is not a regular file moot can open, is not
        held here (the run locks it when it creates it, or refuses it when it opens it)."""
        if self._store_fd is not None:
            return
        try:
            fd = os.open(self.store, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                os.close(fd)
                raise StoreError(
                    f"{self.store} is in use by another moot run (another process, through another name of the "
                    "store: a link); wait for it to end, or stop it"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            self._store_fd = fd
            return

    def _let_go_of_store(self) -> None:
        # closing it drops this process's POSIX locks on the store too (SQLite's): done after the store closes
        if self._store_fd is not None:
            os.close(self._store_fd)
            self._store_fd = None

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None
        self._let_go_of_store()
