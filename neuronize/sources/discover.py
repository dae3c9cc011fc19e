"""Which files a run looks at: the paths given, directories walked with .gitignore honoured."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronize.sources.kinds import SourceKind, included_requirements, kind_of
from neuronize.types import Skipped, SkipReason

if TYPE_CHECKING:  # imported where used: a run on single files never needs it
    import pathspec


SOURCE_SUFFIXES = (".py", ".ipynb")  # the code kinds; the others: neuronize/sources/kinds.py
#: a file named on the command line with one of these suffixes but of no kind is not Python
#: either (pre-commit passes every staged text file to the hook): it is passed over quietly
NOT_PYTHON_SUFFIXES = (".txt", ".md", ".rst", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh",
                       ".lock", ".csv", ".tsv", ".in")
#: plain-text files without a suffix that pre-commit's ``plain-text`` type passes on
NOT_PYTHON_NAMES = frozenset({"license", "licence", "copying", "notice", "authors", "contributors", "readme",
                              "changelog", "changes", "codeowners", "manifest", "version", "owners"})
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "site-packages",
        "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
        ".neuronize_cache", ".eggs", ".ipynb_checkpoints",
    }
)


@dataclass(frozen=True)
class Excludes:
    """Project exclusions: gitignore-style patterns relative to ``root`` (the config's folder).

    ``replace_defaults`` (the config set ``exclude``) drops the built-in folder names; ``.git``
    and virtual environments are always skipped.
    """

    root: Path | None = None
    patterns: tuple[str, ...] = ()
    replace_defaults: bool = False

    @functools.cached_property
    def _spec(self) -> pathspec.PathSpec | None:
        import pathspec

        return pathspec.GitIgnoreSpec.from_lines(self.patterns) if self.patterns else None

    def excluded(self, path: Path, is_dir: bool) -> bool:
        if not self.replace_defaults and path.name in SKIP_DIRS and is_dir:
            return True
        if self._spec is None or self.root is None:
            return False
        try:
            rel = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(self.root))).as_posix()
        except ValueError:
            return False
        return self._spec.match_file(rel + ("/" if is_dir else ""))


NO_EXCLUDES = Excludes()


@dataclass(frozen=True)
class Discovered:
    """A file to process. ``display`` is the path as the user gave it or relative to it."""

    path: Path
    display: str
    explicit: bool
    kind: SourceKind = SourceKind.PYTHON


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def _load_gitignore(directory: Path) -> pathspec.PathSpec | None:
    ignore = directory / ".gitignore"
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs: list[tuple[Path, pathspec.PathSpec]], path: Path, is_dir: bool) -> bool:
    ignored = False
    for base, spec in specs:
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        result = spec.check_file(rel)
        if result.include is not None:
            ignored = result.include
    return ignored


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def discover(paths: Iterable[str], excludes: Excludes = NO_EXCLUDES,
             force_exclude: bool = False,
             kinds: Iterable[SourceKind] | None = None) -> tuple[list[Discovered], list[Skipped]]:
    """Files to process, in a stable order, each once; and what was passed over and why.

    Files named explicitly are processed even if excluded, unless ``force_exclude`` (pre-commit
    passes every staged file). In directories: ``*.py`` and ``*.ipynb`` files not ignored by a
    ``.gitignore`` or the project's excludes, outside VCS folders, virtual environments,
    ``site-packages``, ``build`` and ``dist``. Symlinked directories are not followed; a symlinked file is processed only if its
    target lies inside the given paths (nothing outside them is ever written).

    Other kinds of source (``neuronize/sources/kinds.py``) are found the same way; ``kinds``
    limits the run to some kinds (None: all). A file named explicitly is read as its kind, as
    Python when its name says nothing else.
    """
    wanted = frozenset(kinds) if kinds is not None else frozenset(SourceKind)
    given = list(paths) or ["."]
    roots = [Path(os.path.realpath(p)) for p in given]
    found: list[Discovered] = []
    skipped: list[Skipped] = []
    seen: set[Path] = set()

    def add(path: Path, display: str, explicit: bool, kind: SourceKind, real: Path | None = None) -> None:
        if real is None:  # not known to be a plain file under a given folder
            real = Path(os.path.realpath(path))
            if path.is_symlink() and not _inside(real, roots):
                skipped.append(Skipped(display, SkipReason.SYMLINK_OUTSIDE))
                return
        if real in seen:
            return
        seen.add(real)
        found.append(Discovered(path, display, explicit, kind))

    for raw in given:
        path = Path(raw)
        if path.is_dir():
            base = Path(os.path.realpath(path))
            for file, found_kind, linked in _walk(path, excludes):
                if found_kind in wanted:
                    # the walk follows no linked folder: below ``path`` only the file can be a link
                    real = None if linked else base / file.relative_to(path)
                    add(file, _display(raw, file, path), False, found_kind, real)
            if SourceKind.REQUIREMENTS in wanted:
                for file in _includes(found, path, excludes, seen):
                    add(file, _display(raw, file, path), False, SourceKind.REQUIREMENTS)
        elif path.exists() or path.is_symlink():
            if force_exclude and _force_excluded(path, excludes):
                continue
            kind = explicit_kind(path)
            if kind is not None and kind in wanted:
                add(path, raw, True, kind)
        else:
            skipped.append(Skipped(raw, SkipReason.NO_SUCH_FILE))
    return found, skipped


def _includes(found: list[Discovered], root: Path, excludes: Excludes, seen: set[Path]) -> list[Path]:
    """Files under ``root`` that the requirements files found pull in with ``-r`` / ``-c``
    (``-r base.txt``), and the files those pull in, not found by name (``seen``: the real paths
    of the files found)."""
    queue = [f.path for f in found if f.kind is SourceKind.REQUIREMENTS]
    if not queue:
        return []
    seen = set(seen)  # a copy: the caller adds what this returns, and skips what its own set holds
    out: list[Path] = []
    while queue:
        for file in included_requirements(queue.pop()):
            real = Path(os.path.realpath(file))
            if real in seen or not file.is_file() or not _inside(real, [Path(os.path.realpath(root))]) \
                    or excludes.excluded(file, False):
                continue
            seen.add(real)
            out.append(Path(os.path.normpath(file)))
            queue.append(file)
    return out


def _display(raw: str, file: Path, root: Path) -> str:
    rel = file.relative_to(root).as_posix()
    if raw in (".", "./"):
        return rel
    return f"{raw.rstrip('/')}/{rel}"


def _force_excluded(path: Path, excludes: Excludes) -> bool:
    absolute = Path(os.path.abspath(path))
    if excludes.excluded(absolute, False):
        return True
    return any(excludes.excluded(parent, True) or _is_venv(parent) or parent.name == ".git"
               for parent in absolute.parents)


def explicit_kind(path: Path) -> SourceKind | None:
    """The kind of a file named on the command line: its own, else Python (as ever), unless its
    suffix says it is some other text."""
    kind = kind_of(path)
    name = path.name.lower()
    if kind is None and not name.endswith(NOT_PYTHON_SUFFIXES) and name not in NOT_PYTHON_NAMES:
        return SourceKind.PYTHON
    return kind


def _walk(root: Path, excludes: Excludes) -> Iterator[tuple[Path, SourceKind, bool]]:
    """Every file of a kind under ``root``, and whether it is a symbolic link."""
    specs: list[tuple[Path, pathspec.PathSpec]] = []
    top = _load_gitignore(root)
    if top is not None:
        specs.append((root, top))
    yield from _walk_dir(root, specs, excludes)


def _walk_dir(directory: Path, specs: list[tuple[Path, pathspec.PathSpec]],
              excludes: Excludes) -> Iterator[tuple[Path, SourceKind, bool]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            if (entry.name == ".git" or excludes.excluded(path, True) or _is_venv(path)
                    or _ignored(specs, path, True)):
                continue
            nested = _load_gitignore(path)
            yield from _walk_dir(path, specs + [(path, nested)] if nested else specs, excludes)
        elif not _ignored(specs, path, False) and not excludes.excluded(path, False):
            linked = entry.is_symlink()
            if linked and entry.is_dir():
                continue
            kind = kind_of(path)
            if kind is not None:
                yield path, kind, linked
