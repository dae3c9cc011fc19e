"""The line length a project holds its code to, read from its formatter and linter settings.

Looked up from a file's folder upwards, the first folder with a setting wins, in the order the
tools themselves are usually configured: ``ruff.toml`` / ``.ruff.toml`` (``line-length``),
``pyproject.toml`` (``[tool.ruff] line-length``, else ``[tool.black] line-length``), then
flake8's ``max-line-length`` in ``.flake8``, ``setup.cfg`` or ``tox.ini``. The walk stops at a
repository's root (a folder holding ``.git``). A file that cannot be read or parsed is passed
over: a line length is a preference, never a reason to stop a run.
"""

from __future__ import annotations

import configparser
import functools
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: tomli where installed, else no TOML setting is read
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _toml(path: Path) -> dict[str, object]:
    if tomllib is None:
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _table(data: dict[str, object], *keys: str) -> dict[str, object]:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            return {}
        data = value
    return data


def _flake8(path: Path) -> int | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
        value = parser.get("flake8", "max-line-length", fallback=None) or parser.get(
            "flake8", "max_line_length", fallback=None)
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return _positive(int(value)) if value is not None and value.strip().isdigit() else None


def _in_folder(folder: Path) -> int | None:
    for name in ("ruff.toml", ".ruff.toml"):
        if (folder / name).is_file():
            found = _positive(_toml(folder / name).get("line-length"))
            if found is not None:
                return found
    if (folder / "pyproject.toml").is_file():
        data = _toml(folder / "pyproject.toml")
        for tool in ("ruff", "black"):
            found = _positive(_table(data, "tool", tool).get("line-length"))
            if found is not None:
                return found
    for name in (".flake8", "setup.cfg", "tox.ini"):
        if (folder / name).is_file():
            found = _flake8(folder / name)
            if found is not None:
                return found
    return None


@functools.lru_cache(maxsize=1024)
def line_length_for(folder: str) -> int | None:
    """The line length that governs files in ``folder`` (an absolute path), or None."""
    path = Path(folder)
    found = _in_folder(path)
    if found is not None or (path / ".git").exists() or path.parent == path:
        return found
    return line_length_for(os.path.dirname(folder))
