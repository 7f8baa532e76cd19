"""Atomic, durable file writes: a crash or Ctrl-C never leaves a torn file behind.

The data goes to a temporary file in the target's folder, is flushed to disk, replaces the
target in one ``os.replace``, and the folder itself is flushed so the new name survives a
power cut. The file gets the permissions ``open(path, "wb")`` would give it: a new file those
the umask allows (``0o666 & ~umask``), an existing one keeps its own.

A writer killed outright (SIGKILL, OOM killer) can't remove its temporary file; the next atomic
write into that folder does: temporary names carry the writer's process id (and a tag of its
host and PID namespace), so a file is removed only when its writer is gone from this machine,
or when nobody has touched it for :data:`STALE_AFTER_S` seconds.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import secrets
import stat
import time
import zlib
from collections.abc import Iterator
from typing import BinaryIO

#: a temporary file untouched this long is abandoned even if its writer's pid looks alive
#: (another host, a recycled pid, or Windows, where no pid is checked)
STALE_AFTER_S = 3600
_PREFIX = ".ember-tmp-"
_NAME = re.compile(re.escape(_PREFIX) + r"([0-9a-f]{8})-([0-9]{1,10})-")


def _host_tag() -> str:
    """Which machine and PID namespace a pid belongs to (pids mean nothing outside it)."""
    namespace = ""
    with contextlib.suppress(OSError):
        namespace = os.readlink("/proc/self/ns/pid")
    return f"{zlib.crc32(f'{platform.node()}|{namespace}'.encode()):08x}"


def _alive(pid: int) -> bool:
    if os.name == "nt" or not hasattr(os, "kill"):  # Windows: os.kill(pid, 0) terminates it
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike) -> list[str]:
    """Delete the temporary files that killed writers left in ``folder``; returns their
    names. A live writer's file is never touched (see the module docstring)."""
    tag, removed = _host_tag(), []
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _NAME.match(entry.name)
            if match is None or not entry.is_file(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):  # another writer may be removing it too
                dead = match[1] == tag and not _alive(int(match[2]))
                if dead or now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S:
                    os.unlink(entry.path)
                    removed.append(entry.name)
    return removed


def _fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders can't be opened)."""
    if not hasattr(os, "O_DIRECTORY"):  # Windows
        return
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on a folder
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _create_temporary(folder: str, path: str) -> tuple[int, str]:
    """A new temporary file in ``folder`` (its descriptor, its path) with the mode ``open()``
    would give ``path``: ``os.open``'s 0o666 lets the kernel apply the umask (and a default
    ACL) as it does for ``open()``; an existing target's permission bits are copied."""
    prefix = os.path.join(folder, f"{_PREFIX}{_host_tag()}-{os.getpid()}-")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = prefix + secrets.token_hex(6)
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        return fd, tmp
    raise FileExistsError(f"atomic_write: no free temporary name for {path} in {folder}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; on success it replaces ``path`` in one step.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "out.bin")
    >>> with atomic_write(target) as f:
    ...     _ = f.write(b"data")
    >>> open(target, "rb").read()
    b'data'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    remove_stale_temporaries(folder)
    fd, tmp = _create_temporary(folder, path)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:  # a full disk: say which file
            raise OSError(e.errno, f"{e.strerror}: writing {path} (left as it was)",
                          path) from e
        raise
    _fsync_folder(folder)
