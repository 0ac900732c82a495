"""The broker's log-dir lock: `<log dir>/.lock`, held with a POSIX fcntl lock.

The JVM's FileChannel.tryLock takes an fcntl (POSIX record) lock on Linux, so
fcntl.lockf sees a running broker's lock; flock would not. A `.lock` file that nobody
holds is normal: brokers leave it behind. A `.lock` that is a symlink is refused, never
followed (a dangling one would have its target created).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType

from kafkalog_cli.errors import LockHeld, LogDirIOError
from kafkalog_cli.storage.disk.naming import LOCK
from kafkalog_cli.storage.disk.safety import refuse_link


class LogDirLock:
    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> LogDirLock:
        refuse_link(self.path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:  # a link planted since the check
                refuse_link(self.path)
            raise LogDirIOError(f"{self.path}: cannot open the lock file: {e.strerror}") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LockHeld(f"{self.path}: another process (a running broker?) holds the log dir "
                           "lock; stop it first") from None
        self._fd = fd
        return self

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lock now (what a dry run, which takes no lock
        and writes nothing, can tell its reader). False when there is no .lock file."""
        try:  # read-only and a shared lock: an operator need not be able to write .lock
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        else:
            fcntl.lockf(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LogDirLock:
        return self.acquire()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
