"""Atomic, careful writes: the only code that changes a user's file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".neuronize-tmp"


class WriteRefused(Exception):
    """The file was left as it was; the message says why."""


def read_source(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def write_atomic(path: Path, original: bytes, new: bytes) -> None:
    """Replace ``path``'s content with ``new`` if it still holds ``original``.

    A temp file is written beside the target, fsynced, given the target's mode bits, then
    ``os.replace``d over it, so a reader (or a kill) sees either the old or the new file, never a
    mix. A symlink stays a link: its target is written. Read-only files are refused.
    """
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except OSError as exc:
        raise WriteRefused(f"cannot stat: {exc.strerror}") from exc
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise WriteRefused("file is read-only; not rewritten")
    if read_source(target) != original:
        raise WriteRefused("file changed on disk since it was read; not rewritten (run again)")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(new)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, stat.S_IMODE(info.st_mode))
        os.replace(tmp_name, target)
        _fsync_dir(target.parent)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
