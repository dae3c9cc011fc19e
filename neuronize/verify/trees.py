"""The original and the migrated project side by side, in a temporary folder.

The project (the current directory) is copied twice; ``neuronize fix`` migrates one copy, and its
``--diff`` of the other gives the hunks, each with the rules that made it. The user's files are
read, never written (except by ``fix --verify``, through :func:`apply_files`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence

#: never copied: version control, environments, caches (a test suite does not read them)
IGNORED = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
           ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints")
_FILE = re.compile(r"^\+\+\+ b/(?P<path>.+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?P<rules>.*)$")
_RULE = re.compile(r"\[(NRN\d+) (safe|unsafe)\]")


@dataclass
class Hunk:
    """One hunk of ``neuronize fix --diff``: a stretch of a file, before and after."""

    path: str  # relative to the project
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    rules: list[str]  # "NRN101 safe", ...
    lines: list[str] = field(default_factory=list)  # the diff's lines, header first

    def covers(self, line: int) -> bool:
        """Whether ``line`` of the migrated file is inside this hunk."""
        return self.new_start <= line < self.new_start + max(self.new_count, 1)

    @property
    def header(self) -> str:
        return f"{self.path}:{self.new_start}-{self.new_start + max(self.new_count, 1) - 1}"


def parse_diff(text: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    path = ""
    for line in text.splitlines():
        file = _FILE.match(line)
        if file:
            path = file.group("path")
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old_start, old_count, new_start, new_count = (int(g) if g is not None else 1 for g in hunk.groups()[:4])
            rules = [f"{rule} {safety}" for rule, safety in _RULE.findall(hunk.group("rules"))]
            hunks.append(Hunk(path, old_start, old_count, new_start, new_count, rules, [line]))
        elif hunks and line[:1] in (" ", "+", "-", "\\") and not line.startswith(("--- ", "+++ ")):
            hunks[-1].lines.append(line)
    return hunks


def copy_project(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
    return dest


@dataclass
class Migration:
    original: Path
    migrated: Path
    hunks: list[Hunk]
    changed: list[str]  # files the migration changed, relative to the project
    error: str = ""  # neuronize could not migrate
    warnings: list[str] = field(default_factory=list)


def _neuronize(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuronize", *args], cwd=cwd, capture_output=True,
                          text=True)


def migrate(root: Path, workdir: Path, paths: Sequence[str], target: str | None, unsafe_fixes: bool) -> Migration:
    """Copy the project twice under ``workdir`` and migrate the second copy."""
    name = root.name or "project"
    original = copy_project(root, workdir / "original" / name)
    migrated = copy_project(root, workdir / "migrated" / name)
    options = ["--target", target] if target else []
    options += ["--unsafe-fixes"] if unsafe_fixes else []
    shown = _neuronize(["fix", "--diff", "--no-color", *options, *paths], original)
    migration = Migration(original, migrated, parse_diff(shown.stdout), [])
    if shown.returncode not in (0, 1):
        migration.warnings.append(f"neuronize fix --diff exited {shown.returncode}: {shown.stderr.strip()[-2000:]}")
    done = _neuronize(["fix", "--quiet", *options, *paths], migrated)
    if done.returncode == 2:  # a file could not be processed: the others are migrated
        migration.warnings.append(f"neuronize fix: {done.stderr.strip()[-2000:]}")
    elif done.returncode != 0 and done.returncode != 1:
        migration.error = done.stderr.strip()[-2000:] or f"neuronize fix exited {done.returncode}"
    migration.changed = changed_files(original, migrated)
    return migration


def changed_files(original: Path, migrated: Path) -> list[str]:
    changed = []
    for path in sorted(migrated.rglob("*")):
        if path.is_file() and not path.is_symlink():
            relative = path.relative_to(migrated)
            before = original / relative
            if not before.is_file() or before.read_bytes() != path.read_bytes():
                changed.append(relative.as_posix())
    return changed


def partial_tree(migration: Migration, files: Sequence[str], dest: Path) -> Path:
    """The original with the migrated version of ``files`` only."""
    copy_project(migration.original, dest)
    for relative in files:
        shutil.copy2(migration.migrated / relative, dest / relative)
    return dest


def apply_files(migration: Migration, root: Path, files: Sequence[str]) -> tuple[list[str], list[str]]:
    """Write the migrated version of ``files`` into the user's project; a file changed since
    the copy was made is left alone. Returns (written, skipped)."""
    written, skipped = [], []
    for relative in files:
        target = root / relative
        if not target.is_file() or target.read_bytes() != (migration.original / relative).read_bytes():
            skipped.append(relative)
            continue
        target.write_bytes((migration.migrated / relative).read_bytes())
        written.append(relative)
    return written, skipped
