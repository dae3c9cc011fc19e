"""``[tool.neuronize]`` in ``pyproject.toml`` (or a standalone ``neuronize.toml``): project
settings, so a team need not repeat flags. Which file governs which source is
:mod:`neuronize.sources.settings`' job.

Reading the configuration only parses TOML; nothing from the project is imported or executed.
Every mistake (an unknown key, a wrong type, a code that matches no rule) is a :class:`ConfigError`
whose message is one line naming the file and the key, because a silently ignored setting is
worse than a refused one: the user would believe a rule is off when it is not.
"""

from __future__ import annotations

import difflib
import functools
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuronize.registry import SelectionError, select_rules
from neuronize.rule_index import catalogue
from neuronize.sources.kinds import SourceKind, parse_kinds
from neuronize.types import Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    try:
        import tomli as tomllib
    except ImportError:  # reported by load_config, so the rest of neuronize still works
        tomllib = None

TABLE = "[tool.neuronize]"
#: a standalone configuration file: the settings at its top level; wins over pyproject.toml
STANDALONE = "neuronize.toml"


class ConfigError(ValueError):
    """A configuration neuronize refuses to guess about. ``str()`` is one line."""


@dataclass(frozen=True)
class Config:
    """The settings of one ``[tool.neuronize]`` table; the defaults mean "not set".

    ``None`` (rather than a value) for ``select`` / ``unsafe_fixes`` / ``target`` lets the command
    line tell "the project did not say" from "the project said no".
    """

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    #: gitignore-style patterns, relative to :attr:`root`; replace the built-in excludes
    exclude: tuple[str, ...] | None = None
    #: gitignore-style patterns, relative to :attr:`root`; added to the excludes
    extend_exclude: tuple[str, ...] = ()
    #: glob (relative to :attr:`root`) -> codes ignored in the files it matches
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    target: Target | None = None
    #: the kinds of source read (None: every kind; neuronize/sources/kinds.py)
    kinds: tuple[SourceKind, ...] | None = None
    #: kinds left out, after ``kinds``
    extend_exclude_kinds: tuple[SourceKind, ...] = ()

    @property
    def root(self) -> Path | None:
        """The folder relative paths in the configuration are relative to."""
        return self.path.parent if self.path is not None else None


def find_config(start: Path) -> Path | None:
    """The nearest configuration at or above ``start`` (a file or folder): see :func:`config_in`."""
    start = Path(start).absolute()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        found = config_in(candidate)
        if found is not None:
            return found
    return None


def config_in(folder: Path) -> Path | None:
    """The configuration file of one folder, or ``None``.

    A ``neuronize.toml`` (settings at its top level, like ruff's ``ruff.toml``) wins over a
    ``pyproject.toml`` in the same folder. A ``pyproject.toml`` without ``[tool.neuronize]`` is
    passed over, as ruff does, so a sub-package's unrelated ``pyproject.toml`` does not hide the
    project's settings. One that mentions ``tool.neuronize`` but cannot be parsed is returned, so
    :func:`load_config` reports the error instead of the settings vanishing.
    """
    standalone = folder / STANDALONE
    if standalone.is_file():
        return standalone
    pyproject = folder / "pyproject.toml"
    try:
        data = pyproject.read_bytes()
    except OSError:
        return None
    if b"neuronize" not in data:
        return None
    try:
        parsed = _parse(pyproject, data)
    except ConfigError:
        return pyproject if re.search(rb"tool\s*\.\s*[\"']?neuronize", data) else None
    tool = parsed.get("tool")
    return pyproject if isinstance(tool, dict) and "neuronize" in tool else None


def load_config(path: Path) -> Config:
    """The validated ``[tool.neuronize]`` table of ``path`` (defaults when it has none)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    parsed = _parse(path, data)
    if path.name == STANDALONE:
        table: object = parsed
        where = f"{path}:"
    else:
        tool = parsed.get("tool", {})
        table = tool.get("neuronize") if isinstance(tool, dict) else None
        where = f"{path}: {TABLE}"
    if table is None:
        return Config(path=path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table, not {_kind(table)}")

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{where} {key}: {problem}")

    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key.replace("_", "-"), _KEYS, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(
            f"{where} unknown key {key!r} ({hint}known: {', '.join(sorted(_KEYS))})"
        )
    values = {_KEYS[key]: _PARSERS[key](value, key, fail) for key, value in table.items()}
    return Config(path=path, **values)


def ignored_codes_for(config: Config, relative_path: str) -> tuple[str, ...]:
    """The codes ``per-file-ignores`` turns off for one file, in configuration order.

    ``relative_path`` is relative to the configuration's folder. Globs follow :mod:`fnmatch`
    (``*`` also crosses ``/``, as in ruff), case-sensitively on every OS, plus ``**/`` matching no
    folder at all; a glob without ``/`` also matches the file's bare name in any folder.
    """
    path = _normalise(relative_path)
    name = path.rsplit("/", 1)[-1]
    codes: list[str] = []
    for glob, ignored in config.per_file_ignores.items():
        pattern = _glob_regex(_normalise(glob))
        if pattern.fullmatch(path) or ("/" not in glob and pattern.fullmatch(name)):
            codes.extend(c for c in ignored if c not in codes)
    return tuple(codes)


# -- parsing -------------------------------------------------------------------------------------

def _parse(path: Path, data: bytes) -> dict[str, Any]:
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        raise ConfigError(f"{path}: reading {TABLE} on Python 3.10 needs the 'tomli' package")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        # the message already says "(at line L, column C)"
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def _kind(value: object) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "a list", dict: "a table"}
    return names.get(type(value), type(value).__name__)


Fail = Callable[[str, str], ConfigError]


def _strings(value: object, key: str, fail: Fail) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise fail(key, f"expected a list of strings, got {_kind(value)}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise fail(key, f"expected a list of non-empty strings, found {item!r}")
    return tuple(item.strip() for item in value)


def _codes(value: object, key: str, fail: Fail) -> tuple[str, ...]:
    codes = _strings(value, key, fail)
    for code in codes:
        try:
            select_rules(catalogue(), [code])
        except SelectionError:
            raise fail(key, f"{code!r} matches no rule id, id prefix or name "
                            "(see `neuronize rules`)") from None
    return codes


def _select(value: object, key: str, fail: Fail) -> tuple[str, ...]:
    codes = _codes(value, key, fail)
    if not codes:
        # An empty list reads as "no rules", which select_rules would take as "all rules".
        raise fail(key, "an empty list selects nothing; leave the key out to select every rule")
    return codes


def _patterns(value: object, key: str, fail: Fail) -> tuple[str, ...]:
    patterns = _strings(value, key, fail)
    try:
        import pathspec  # only when a configuration sets patterns

        pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as exc:  # pathspec raises various errors for a malformed pattern
        raise fail(key, f"bad pattern: {exc}") from None
    return patterns


def _bool(value: object, key: str, fail: Fail) -> bool:
    if not isinstance(value, bool):
        raise fail(key, f"expected true or false, got {_kind(value)}")
    return value


def _target(value: object, key: str, fail: Fail) -> Target:
    names = [t.value for t in Target]
    if value not in names:
        raise fail(key, f"expected one of {', '.join(map(repr, names))}, got {value!r}")
    return Target(value)


def _per_file(value: object, key: str, fail: Fail) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise fail(key, f"expected a table of glob = [codes], got {_kind(value)}")
    result: dict[str, tuple[str, ...]] = {}
    for glob, codes in value.items():
        if not glob.strip():
            raise fail(key, "empty glob")
        result[glob] = _codes(codes, f"{key}.{glob!r}", fail)
    return result


def _kinds(value: object, key: str, fail: Fail) -> tuple[SourceKind, ...]:
    try:
        return parse_kinds(list(_strings(value, key, fail)))
    except ValueError as exc:
        raise fail(key, str(exc)) from None


_PARSERS: Mapping[str, Callable[[Any, str, Fail], Any]] = {
    "select": _select,
    "ignore": _codes,
    "unsafe-fixes": _bool,
    "exclude": _patterns,
    "extend-exclude": _patterns,
    "per-file-ignores": _per_file,
    "target": _target,
    "kinds": _kinds,
    "extend-exclude-kinds": _kinds,
}
_KEYS = {key: key.replace("-", "_") for key in _PARSERS}


# -- globs ---------------------------------------------------------------------------------------

def _normalise(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


@functools.lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """fnmatch's translation, except that ``**/`` may also match nothing."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob[i] == "*":
            while i < len(glob) and glob[i] == "*":
                i += 1
            out.append(".*")
        elif glob[i] == "?":
            out.append(".")
            i += 1
        elif glob[i] == "[" and _class_end(glob, i) > 0:
            end = _class_end(glob, i)
            body = glob[i + 1:end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith(("^", "[")):
                body = "\\" + body
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _class_end(glob: str, start: int) -> int:
    """Index of the ``]`` closing the character class opened at ``start``, or -1 (a literal ``[``)."""
    j = start + 1
    if j < len(glob) and glob[j] == "!":
        j += 1
    if j < len(glob) and glob[j] == "]":
        j += 1
    return glob.find("]", j)
