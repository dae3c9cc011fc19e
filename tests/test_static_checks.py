"""Lint (ruff) and type check (mypy) of neuronize/ and transforms/, part of the suite.

mypy cannot follow setuptools' editable mapping of ``transforms/`` to ``neuronize.transforms``,
so it checks a shadow tree of symbolic links that lays the package out as it is installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> list[str]:
    if shutil.which(name) is None and not _module_available(name):
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return [sys.executable, "-m", name]


def _module_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_ruff_is_clean() -> None:
    result = subprocess.run([*_tool("ruff"), "check", "--no-cache", "neuronize", "transforms"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_is_clean(tmp_path: Path) -> None:
    package = tmp_path / "neuronize"
    package.mkdir()
    for entry in (ROOT / "neuronize").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "transforms").symlink_to(ROOT / "transforms")
    result = subprocess.run(
        [*_tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
         str(tmp_path / ".mypy_cache"), "-p", "neuronize"],
        cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
