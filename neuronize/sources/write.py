"""Atomic, careful writes: every file neuronize writes goes through here.

:func:`write_atomic` rewrites a user's source file (and refuses when that would be wrong);
:func:`write_bytes_atomic` creates or replaces a file neuronize owns (a baseline, a report, a
cache entry, the README's rule table). Both write a temp file beside the target and
``os.replace`` it over the target, so a reader (or a kill) sees the old file or the new one,
never a mix; concurrent writers each use a temp file of their own, and the last one wins whole.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path
from collections.abc import Iterable

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
    _replace(target, new, stat.S_IMODE(info.st_mode), fsync=True)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Create or replace ``path`` with ``data``, atomically (a symlink stays a link: its target
    is written).

    ``mode``: the permission bits; None keeps an existing file's, and gives a new file what
    ``open()`` would (``0o666`` less the umask). ``fsync=False`` skips flushing to disk, for a
    file whose loss in a power cut costs nothing but a recomputation (a cache entry).
    """
    target = Path(os.path.realpath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            pass
    _replace(target, data, mode, fsync=fsync)


def _replace(target: Path, data: bytes, mode: int | None, *, fsync: bool) -> None:
    tmp_name = _write_temp(target, data, mode, fsync=fsync)
    try:
        os.replace(tmp_name, target)
        if fsync:
            _fsync_dir(target.parent)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _write_temp(target: Path, data: bytes, mode: int | None, *, fsync: bool) -> str:
    """A complete copy of ``data`` beside ``target``, under a temporary name that carries this
    process's id, so a later run can tell a stale one (see :func:`remove_stale_temp_files`).

    With a ``mode`` the temp file is created owner-only and given ``mode`` once written (never
    briefly more open than the file it replaces); without one, it is created the way ``open()``
    creates a file (``0o666`` less the umask)."""
    while True:
        name = str(target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is not None else 0o666)
            break
        except FileExistsError:
            continue
    try:
        _write_all(fd, data, mode, fsync=fsync)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    os.close(fd)
    return name


def remove_stale_temp_files(directories: Iterable[Path]) -> list[Path]:
    """Delete temp files that a killed neuronize left beside its targets; return them.

    Only names of our own pattern (``.<file>.<pid>.<random>.neuronize-tmp``) whose process is
    gone are touched, and only in ``directories`` (the folders of the files being fixed).
    """
    removed = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            match = _TEMP_NAME.match(entry.name)
            if match is None or _alive(int(match.group(1))):
                continue
            try:
                os.unlink(entry.path)
            except OSError:
                continue
            removed.append(Path(entry.path))
    return removed


_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[^.]+" + re.escape(TEMP_SUFFIX) + "$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_all(fd: int, data: bytes, mode: int | None, *, fsync: bool) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if mode is not None:
        os.fchmod(fd, mode)
    if fsync:
        os.fsync(fd)


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
