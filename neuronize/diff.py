"""Unified diffs that `git apply` and `patch -p1` accept, byte-faithful to the file, explained.

Lines keep their own endings (CRLF stays CRLF inside the hunk lines), and a missing final newline
gets the standard ``\\ No newline at end of file`` marker.

**Annotations.** Each hunk header carries the findings whose edits are inside the hunk, after the
second ``@@`` (the "section heading" slot, which ``git apply`` and ``patch`` ignore)::

    @@ -26,7 +26,7 @@ [NRN101 safe] `device` setting: `"cuda"` -> `"neuron"` [NRN110 safe] ...

A hunk no finding explains (an import the engine added or removed for the edits) says so:
``[imports] adds `torch_neuronx` for the edits in this file``. Colour (ANSI) is used only when
asked for, which the command line does only on a terminal without ``--no-color`` / ``NO_COLOR``.
"""

from __future__ import annotations

import ast
import codecs
import difflib
import io
import os
import re
import textwrap
import tokenize
from dataclasses import dataclass
from typing import IO, Iterable, Sequence

from neuronize.types import Finding

NO_NEWLINE = "\\ No newline at end of file\n"


def use_color(stream: IO[str] | IO[bytes], no_color: bool = False) -> bool:
    """ANSI colour only on a terminal, and never with ``--no-color`` or a non-empty ``NO_COLOR``
    (https://no-color.org)."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True)
class Style:
    """ANSI styling, or none at all (``Style(False)``)."""

    color: bool = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def header(self, text: str) -> str:
        return self._wrap("1", text)

    def hunk(self, text: str) -> str:
        return self._wrap("36", text)

    def note(self, text: str) -> str:
        return self._wrap("33", text)

    def error(self, text: str) -> str:
        return self._wrap("31;1", text)

    def line(self, prefix: str, text: str) -> str:
        code = {"-": "31", "+": "32"}.get(prefix)
        return self._wrap(code, prefix + text) if code else prefix + text


def decode(source: bytes) -> str:
    """Text for display, decoded the way Python itself would read the file."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError:
        encoding = "utf-8"
    if encoding == "utf-8-sig" or source.startswith(codecs.BOM_UTF8):
        return source.decode("utf-8-sig", errors="replace")
    return source.decode(encoding, errors="replace")


def _lines(text: str) -> list[str]:
    # str.splitlines also splits on \x0c, \x1c... which Python source treats as ordinary
    # characters: split on real line endings only.
    lines: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            lines.append(text[start : i + 1])
            start = i + 1
        elif ch == "\r":
            end = i + 2 if i + 1 < n and text[i + 1] == "\n" else i + 1
            lines.append(text[start:end])
            start = end
            i = end - 1
        i += 1
    if start < n:
        lines.append(text[start:])
    return lines


# -- explaining a change -----------------------------------------------------------------------
def findings_touching(findings: Iterable[Finding], i1: int, i2: int) -> list[Finding]:
    """The findings whose original lines touch the change of old lines ``[i1, i2)`` (0-based).

    A pure insertion (``i1 == i2``) sits between old lines ``i1`` and ``i1 + 1`` (1-based) and
    touches a finding on either."""
    lo, hi = (i1 + 1, i2) if i2 > i1 else (i1, i1 + 1)
    return [f for f in findings if f.line <= hi and max(f.end_line, f.line) >= lo]


def finding_label(finding: Finding) -> str:
    """``[NRN101 safe] reason``: rule id, safety class and the one-line reason."""
    reason = " ".join(finding.message.split())
    return f"[{finding.rule} {finding.safety.value}] {reason}"


_IMPORT_LINE = re.compile(r"^\s*(import|from)\s")


def import_names(text: str) -> list[str]:
    """Names bound by the import statements in ``text`` (a few whole lines of a file)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        statements = [line.strip() for line in text.splitlines() if _IMPORT_LINE.match(line)]
        tree = ast.Module(body=[], type_ignores=[])
        for statement in statements:
            try:
                tree.body.extend(ast.parse(statement).body)
            except SyntaxError:
                continue
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.append(alias.asname or alias.name.split(".")[0])
    return list(dict.fromkeys(names))


def _explain(findings: Sequence[Finding], old: Sequence[str], new: Sequence[str],
             blocks: Sequence[tuple[str, int, int, int, int]]) -> str:
    inside: list[Finding] = []
    unexplained = []
    for block in blocks:
        touching = [f for f in findings_touching(findings, block[1], block[2]) if f.applied]
        inside.extend(f for f in touching if f not in inside)
        if not touching:
            unexplained.append(block)
    parts = [finding_label(f) for f in sorted(inside)]
    old_text = "".join("".join(old[i1:i2]) for _, i1, i2, _, _ in unexplained)
    new_text = "".join("".join(new[j1:j2]) for _, _, _, j1, j2 in unexplained)
    old_names, new_names = import_names(old_text), import_names(new_text)
    imports = [f"adds `{n}`" for n in new_names if n not in old_names]
    imports += [f"removes `{n}`" for n in old_names if n not in new_names]
    if imports:
        parts.insert(0, "[imports] " + ", ".join(imports) + " for the edits in this file")
    return " ".join(parts)


def _range(start: int, stop: int) -> str:
    length = stop - start
    beginning = start + 1
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def unified_diff(display: str, before: bytes, after: bytes, context: int = 3,
                 findings: Sequence[Finding] = (), style: Style = Style()) -> str:
    """The diff of one file, with ``a/`` and ``b/`` prefixes (``git apply`` style); each hunk
    header names the findings whose edits it holds (see the module docstring)."""
    old, new = _lines(decode(before)), _lines(decode(after))
    if old == new:
        return ""
    out: list[str] = [style.header(f"--- a/{display}") + "\n", style.header(f"+++ b/{display}") + "\n"]

    def emit(prefix: str, line: str) -> None:
        body = line.rstrip("\r\n") if style.color else line
        if style.color:
            out.append(style.line(prefix, body) + line[len(body):])
        else:
            out.append(prefix + line)
        if not line.endswith(("\n", "\r")):
            out.append("\n" + NO_NEWLINE)

    # a notebook finding's line counts within its cell: it cannot be matched to a hunk by line
    findings = [f for f in findings if getattr(f, "cell", None) is None]
    matcher = difflib.SequenceMatcher(None, old, new)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        header = f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"
        note = _explain(findings, old, new, [op for op in group if op[0] != "equal"])
        out.append(style.hunk(header) + (" " + style.note(note) if note else "") + "\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in old[i1:i2]:
                    emit(" ", line)
                continue
            for line in old[i1:i2]:
                emit("-", line)
            for line in new[j1:j2]:
                emit("+", line)
    return "".join(out)
