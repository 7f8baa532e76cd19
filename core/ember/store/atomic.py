"""Atomic file writes: a crash or Ctrl-C never leaves a torn file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


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
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
