"""A run's exclusive hold on its store (``StoreLock``): an OS lock on ``STORE.lock`` beside it, which dies
with the process, and ``lock_holder``, which a reader asks whether a run holds a store (and which PID)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path

from moot.runner.store.errors import StoreError


def lock_path(store: Path) -> Path:
    """The lock file of a store: STORE.lock beside it, present while a run holds the store."""
    return store.with_name(store.name + ".lock")


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode("ascii", "replace").strip() or 0)
    except (OSError, ValueError):
        return 0


def lock_holder(store: Path) -> int | None:
    """The PID of the process holding ``store`` (0: one holds it but has not written its PID yet), or
    None when none does. Creates nothing: a store without a lock file is not held."""
    try:
        fd = os.open(lock_path(store), os.O_RDONLY)
    except OSError:
        return None
    try:
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
    """A run's exclusive hold on its store: ``flock`` on STORE.lock, which holds the PID.

    The OS releases the lock when the process ends, however it ends, so a store left by a killed
    run is free; ``release`` removes the file. ``acquire`` waits ``wait_s`` at most (a reader's
    check, ``lock_holder``, holds it for a moment) and then raises a StoreError naming the holder."""

    def __init__(self, store: Path, wait_s: float = 1.0):
        self.store = store
        self.path = lock_path(store)
        self.wait_s = wait_s
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise StoreError(
                        f"cannot write {self.store}: its folder is read-only (a run keeps its .lock, -wal and "
                        "-shm files beside the store)"
                    ) from None
                raise StoreError(
                    f"cannot lock {self.store}: cannot create {self.path.name} beside it ({exc.strerror})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                holder = f"PID {pid}" if pid else "another process"
                raise StoreError(
                    f"{self.store} is in use by another moot run ({holder}); wait for it to end, or stop it"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            # its last holder may have removed the file between our open and our lock: lock the file there now
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError as exc:
                os.close(fd)
                if exc.errno == errno.ENOSPC:
                    raise StoreError(f"cannot lock {self.store}: the disk is full") from None
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            self._fd = fd
            return

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None
