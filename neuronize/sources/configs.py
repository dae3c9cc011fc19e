"""Keys and scalar values of YAML and JSON configs, with where their values are written.

Not a YAML or JSON library: a reformatting round trip is exactly what must not happen. YAML is read
line by line (``key: value`` with the path of the keys above it by indentation; block scalars
and flow collections are skipped); JSON is scanned once for the scalar values of objects.
Edits then replace a value's characters only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from neuronize.sources.lines import Line, code_part


@dataclass(frozen=True)
class Entry:
    """A scalar ``value`` under the key path ``path``, written on line ``line`` (0-based) at
    ``start:end`` (quotes excluded)."""

    path: tuple[str, ...]
    value: str
    line: int
    start: int
    end: int
    key_start: int = 0

    @property
    def key(self) -> str:
        return self.path[-1] if self.path else ""


_YAML_ENTRY = re.compile(
    r"^(?P<indent>[ \t]*)(?P<dash>-[ \t]+)?(?P<key>[A-Za-z_][\w.-]*|\"[^\"]*\"|'[^']*')[ \t]*:(?=[ \t]|$)[ \t]*"
    r"(?P<value>.*?)[ \t]*$")


def yaml_entries(lines: Sequence[Line]) -> Iterator[Entry]:
    """``key: scalar`` lines of a YAML file with their key paths."""
    stack: list[tuple[int, str]] = []  # (indent, key) of the mappings above
    block: int | None = None  # the indent a block scalar's text must exceed
    for index, line in enumerate(lines):
        text = line.text
        stripped = text.strip()
        indent = len(text) - len(text.lstrip(" \t"))
        if block is not None:
            if not stripped or indent > block:
                continue
            block = None
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        match = _YAML_ENTRY.match(code_part(text))
        if match is None:
            continue
        key_indent = indent + len(match.group("dash") or "")
        while stack and stack[-1][0] >= key_indent:
            stack.pop()
        key = match.group("key").strip("\"'")
        path = (*(k for _, k in stack), key)
        value = match.group("value")
        if not value:
            stack.append((key_indent, key))
            continue
        if value[:1] in "|>":
            block = indent
            continue
        if value[:1] in "[{&*!":
            continue
        start = match.start("value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value, start = value[1:-1], start + 1
        yield Entry(path, value, index, start, start + len(value), match.start("key"))


_JSON_TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|[{}\[\],:]|[^\s{}\[\],:\"]+")


def json_entries(lines: Sequence[Line]) -> Iterator[Entry]:
    """Scalar values of JSON objects (strings without their quotes, numbers, true/false/null),
    with their key paths. Arrays are entered but their items have no key of their own."""
    stack: list[str | None] = []  # for each open container: the key it was opened under
    containers: list[str] = []
    key: str | None = None
    expect_value = False
    for index, line in enumerate(lines):
        for match in _JSON_TOKEN.finditer(line.text):
            token = match.group()
            if token in "{[":
                containers.append(token)
                stack.append(key if expect_value else None)
                key, expect_value = None, False
            elif token in "}]":
                if containers:
                    containers.pop()
                    stack.pop()
                key, expect_value = None, False
            elif token == ":":
                expect_value = True
            elif token == ",":
                key, expect_value = None, False
            elif containers and containers[-1] == "{" and not expect_value and token.startswith("\""):
                key = token[1:-1]
            elif expect_value and key is not None:
                start, end = match.start(), match.end()
                if token.startswith("\""):
                    start, end = start + 1, end - 1
                path = (*(k for k in stack if k is not None), key)
                yield Entry(path, line.text[start:end], index, start, end)
                expect_value = False
