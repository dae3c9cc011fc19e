"""Requirement specifiers where they are written: lines of requirements files, the quoted
strings of ``pyproject.toml`` dependency tables (``[project] dependencies``,
``[project.optional-dependencies]``, ``[dependency-groups]``), the ``install_requires`` and
``extras_require`` values of a ``setup.cfg``, and the ``dependencies`` (with their ``pip:`` list)
and ``channels`` of conda environment files. Offsets only; nothing reformatted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from neuronize.sources.lines import Line, code_part

_NAME = re.compile(r"[ \t]*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)[ \t]*(?P<extras>\[[^\]]*\])?")
_PIN = re.compile(r"===?[ \t]*(?P<version>[0-9][0-9A-Za-z.*!_-]*(?:\+(?P<local>[0-9A-Za-z.]+))?)")
_OPTION_SYNTAX = r"(?P<flag>--index-url|--extra-index-url|--find-links|-i|-f)(?:[ \t]*=[ \t]*|[ \t]+)(?P<value>\S+)"
_OPTION = re.compile(r"^[ \t]*" + _OPTION_SYNTAX)
#: an index option after a specifier on one line (``torch==1.11.0 --extra-index-url=URL`` in a cog.yaml)
_TRAILING_OPTION = re.compile(r"[ \t]+" + _OPTION_SYNTAX)
_STRING = re.compile(r"\"(?P<d>(?:[^\"\\]|\\.)*)\"|'(?P<s>[^']*)'")


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it (``Flash_Attn`` -> ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """One specifier: ``line`` 0-based; offsets into that line's text."""

    line: int
    start: int  # where the specifier begins
    end: int  # where it ends (before a marker's end, a comment or a closing quote)
    name: str
    name_end: int
    version: str | None = None  # the exact pin (``==2.13.0+cu121``), if any
    local_start: int = -1  # where ``+cu121`` starts, -1 if none

    @property
    def key(self) -> str:
        return normalise(self.name)

    @property
    def local(self) -> str:
        return "" if self.version is None or "+" not in self.version else self.version.split("+", 1)[1]


@dataclass(frozen=True)
class IndexOption:
    """``--index-url URL`` and friends (requirements files), or an index URL in a pyproject."""

    line: int
    flag: str
    value: str
    start: int
    end: int


def parse_specifier(text: str, line: int, offset: int) -> Requirement | None:
    """The requirement in ``text`` (placed at ``offset`` of line ``line``), or None if ``text`` is
    no named requirement (an option, a path, a URL)."""
    match = _NAME.match(text)
    if match is None or text.lstrip().startswith(("-", ".", "/")) or "://" in text[: match.end() + 3]:
        return None
    rest = text[match.end():]
    if rest.lstrip().startswith(("@", ":")) or (rest and not rest[:1].isspace() and rest[:1] not in "=<>!~;,["):
        return None
    end = len(text.split(";", 1)[0].rstrip())
    pin = _PIN.search(text, match.end(), end)
    version = pin.group("version") if pin else None
    local_start = offset + pin.start("local") - 1 if pin and pin.group("local") else -1
    return Requirement(line, offset + match.start("name"), offset + end, match.group("name"),
                       offset + match.end("name"), version, local_start)


def requirements_lines(lines: Sequence[Line]) -> Iterator[Requirement | IndexOption]:
    """Specifiers and index options of a requirements file (continued lines are read alone)."""
    for index, line in enumerate(lines):
        code = code_part(line.text).rstrip().removesuffix("\\").rstrip()
        option = _OPTION.match(code)
        if option is not None:
            yield IndexOption(index, option.group("flag"), option.group("value"), option.start("value"),
                              option.end("value"))
            continue
        requirement = parse_specifier(code, index, 0)
        if requirement is not None:
            yield requirement


_TABLE = re.compile(r"^[ \t]*\[\[?[ \t]*(?P<name>[^\]]+?)[ \t]*\]\]?")
_ARRAY_KEY = re.compile(r"^[ \t]*(?P<key>[A-Za-z0-9_.\"'-]+)[ \t]*=[ \t]*\[")


def _dependency_array(table: str, key: str) -> bool:
    key = key.strip("\"'")
    return ((table == "project" and key == "dependencies")
            or table in ("project.optional-dependencies", "dependency-groups"))


def pyproject_items(lines: Sequence[Line]) -> Iterator[Requirement | IndexOption]:
    """Specifiers in the dependency arrays of a ``pyproject.toml``, and index URLs in any string
    (``[[tool.uv.index]] url = ...``, ``[[tool.poetry.source]]``)."""
    table = ""
    depth = 0  # bracket depth inside a dependency array
    for index, line in enumerate(lines):
        code = code_part(line.text)
        header = _TABLE.match(code) if depth == 0 else None
        if header is not None:
            table = header.group("name").replace(" ", "")
            continue
        scan_from = 0
        if depth == 0:
            key = _ARRAY_KEY.match(code)
            if key is not None and _dependency_array(table, key.group("key")):
                depth = 1
                scan_from = key.end()
        for match in _STRING.finditer(code, scan_from):
            value = match.group("d") if match.group("d") is not None else match.group("s")
            start = match.start() + 1
            if "/whl/cu" in value or "/whl/nightly/cu" in value:
                yield IndexOption(index, "url", value, start, start + len(value))
            elif depth:
                requirement = parse_specifier(value, index, start)
                if requirement is not None:
                    yield requirement
        if depth:
            depth += _brackets(code[scan_from:])
            depth = max(depth, 0)


def _brackets(code: str) -> int:
    """``[`` minus ``]`` outside strings."""
    outside = _STRING.sub("", code)
    return outside.count("[") - outside.count("]")


_CFG_SECTION = re.compile(r"^\[[ \t]*(?P<name>[^\]]+?)[ \t]*\]")
_CFG_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_.-]+)[ \t]*[=:][ \t]*")


def _cfg_requirement_key(section: str, key: str) -> bool:
    return (section == "options" and key == "install_requires") or section == "options.extras_require"


def setup_cfg_items(lines: Sequence[Line]) -> Iterator[Requirement]:
    """Specifiers of a ``setup.cfg``: ``[options] install_requires`` and every key of
    ``[options.extras_require]``, one per line (the value after ``=`` and its indented
    continuation lines); ``file:`` values and comment lines (``#``, ``;``) left out."""
    section = ""
    inside = False  # in the value of a requirements key
    for index, line in enumerate(lines):
        text = line.text
        if not text[:1].isspace():  # a section, a key or a comment at the left edge ends a value
            inside = False
            header = _CFG_SECTION.match(text)
            key = _CFG_KEY.match(text)
            if header is not None:
                section = header.group("name").lower()
            elif key is not None and _cfg_requirement_key(section, key.group("key").lower()):
                inside = True
                yield from _cfg_value(text, index, key.end())
        elif inside and not text.lstrip().startswith(";"):
            yield from _cfg_value(text, index, 0)


def _cfg_value(text: str, index: int, offset: int) -> Iterator[Requirement]:
    code = code_part(text[offset:])
    if code.strip().startswith("file:"):
        return
    requirement = parse_specifier(code, index, offset)
    if requirement is not None:
        yield requirement


@dataclass(frozen=True)
class CondaPackage:
    """A conda dependency (``cudatoolkit=11.8``, ``nvidia::cuda-toolkit``) or channel (``nvidia``)."""

    line: int
    start: int
    end: int
    name: str  # without channel and version
    spec: str  # as written
    channel: bool = False  # an entry of ``channels:``


_LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)-[ \t]+(?P<q>[\"']?)(?P<spec>[^\"'#]*?)(?P=q)[ \t]*$")
#: a key of a YAML file's top level (`dependencies:`, `build:`)
TOP_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)[ \t]*:")


def conda_items(lines: Sequence[Line]) -> Iterator[Requirement | CondaPackage]:
    """The dependencies and channels of a conda environment file; ``pip:`` items as requirements."""
    section = ""
    pip_indent: int | None = None  # the indent of the ``- pip:`` item whose list we are in
    for index, line in enumerate(lines):
        code = code_part(line.text).rstrip()
        top = TOP_KEY.match(code)
        if top is not None:
            section, pip_indent = top.group("key"), None
            continue
        stripped = code.strip()
        indent = len(code) - len(code.lstrip())
        if pip_indent is not None and indent <= pip_indent and stripped:
            pip_indent = None
        if stripped.startswith("- pip:") or stripped == "- pip :":
            pip_indent = indent
            continue
        item = _LIST_ITEM.match(code)
        if item is None or section not in ("dependencies", "channels"):
            continue
        spec, start = item.group("spec"), item.start("spec")
        if pip_indent is not None:
            requirement = parse_specifier(spec, index, start)
            if requirement is not None:
                yield requirement
            continue
        name = re.split(r"[=<>!~ \[]", spec.split("::")[-1], maxsplit=1)[0]
        yield CondaPackage(index, start, start + len(spec), name.lower(), spec, channel=section == "channels")


def cog_items(lines: Sequence[Line]) -> Iterator[Requirement | IndexOption]:
    """The ``build: python_packages:`` list of a ``cog.yaml`` as requirements, with the index
    options an item carries after its specifier (``"torch==1.11.0 --extra-index-url=URL"``)."""
    in_build, list_indent = False, None  # list_indent: the indent of `python_packages:` while in it
    for index, line in enumerate(lines):
        code = code_part(line.text).rstrip()
        top = TOP_KEY.match(code)
        if top is not None:
            in_build, list_indent = top.group("key") == "build", None
            continue
        indent = len(code) - len(code.lstrip())
        if list_indent is not None and code.strip() and indent <= list_indent and not code.lstrip().startswith("-"):
            list_indent = None
        if in_build and code.strip().startswith("python_packages:"):
            list_indent = indent
            continue
        item = _LIST_ITEM.match(code)
        if list_indent is None or item is None:
            continue
        spec, start = item.group("spec"), item.start("spec")
        option = _TRAILING_OPTION.search(spec)
        if option is not None:
            yield IndexOption(index, option.group("flag"), option.group("value"), start + option.start("value"),
                              start + option.end("value"))
            spec = spec[:option.start()].rstrip()
        requirement = parse_specifier(spec, index, start)
        if requirement is not None:
            yield requirement
