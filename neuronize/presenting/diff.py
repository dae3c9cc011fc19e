"""Unified diffs that `git apply` and `patch -p1` accept, byte-faithful to the file, explained.

Lines keep their own endings (CRLF stays CRLF inside the hunk lines), and a missing final newline
gets the standard ``\\ No newline at end of file`` marker.

**Annotations.** The hunks are :mod:`neuronize.presenting.hunks`' model, shared with ``fix -i``. Each
hunk header carries the findings whose edits are inside the hunk, after the
second ``@@`` (the "section heading" slot, which ``git apply`` and ``patch`` ignore)::

    @@ -26,7 +26,7 @@ [NRN101 safe] `device` setting: `"cuda"` -> `"neuron"` [NRN110 safe] ...

A hunk no finding explains (an import the engine added or removed for the edits) says so:
``[imports] adds `torch_neuronx` for the edits in this file``. A header stays within
:data:`HEADER_WIDTH` columns: when the reasons do not fit, it keeps the ``[NRN101 safe]`` tags and
the reasons are written in full as ``#`` lines before the file's ``---`` line, a preamble that
``git apply`` and ``patch`` skip as they skip a mail's text. Colour (ANSI) is used only when
asked for, which the command line does only on a terminal without ``--no-color`` / ``NO_COLOR``.
"""

from __future__ import annotations

import codecs
import io
import re
import os
import tokenize
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING
from collections.abc import Sequence

from neuronize.types import Finding

if TYPE_CHECKING:
    from neuronize.presenting.hunks import Hunk

#: a hunk header longer than this keeps only its ``[NRN101 safe]`` tags; the reasons go before
#: the file's ``---`` line (a patch preamble, which ``git apply`` and ``patch`` skip)
HEADER_WIDTH = 100

NO_NEWLINE = "\\ No newline at end of file\n"


def wants_color(stream: IO[str] | IO[bytes], choice: str = "auto") -> bool:
    """``--color always|never`` decides; with ``auto`` a non-empty ``FORCE_COLOR`` turns colour
    on (it wins over ``NO_COLOR``: it is set for one run, ``NO_COLOR`` is a standing
    preference), a non-empty ``NO_COLOR`` (https://no-color.org) turns it off, else colour only
    on a terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
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


#: one line with its ending: str.splitlines also splits on \x0c, \x1c... which Python source
#: treats as ordinary characters, so split on real line endings only
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


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
    from neuronize.presenting.hunks import context_hunks, header_note, in_file_lines, short_note  # a diff's work, not start-up's

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

    findings = in_file_lines(display, before, findings)  # a notebook's: on the notebook's lines
    reasons: list[str] = []
    for number, hunk in enumerate(context_hunks(old, new, findings, context), start=1):
        header = (f"@@ -{_range(hunk.old_start, hunk.old_end)} "
                  f"+{_range(hunk.new_start, hunk.new_end)} @@")
        note = header_note(hunk)
        if len(header) + 1 + len(note) > HEADER_WIDTH:
            reasons += _reasons(display, number, hunk)
            note = short_note(hunk, HEADER_WIDTH - len(header) - 1)
        out.append(style.hunk(header) + (" " + style.note(note) if note else "") + "\n")
        for tag, i1, i2, j1, j2 in hunk.ops:
            if tag == "equal":
                for line in old[i1:i2]:
                    emit(" ", line)
                continue
            for line in old[i1:i2]:
                emit("-", line)
            for line in new[j1:j2]:
                emit("+", line)
    # Text before a file's `---` line is a patch's preamble, which `git apply` and `patch` skip.
    return "".join([*(style.note(line) + "\n" for line in reasons), *out])


def _reasons(display: str, number: int, hunk: Hunk) -> list[str]:
    """The preamble lines of a hunk whose header was cut: each reason in full, wrapped."""
    import textwrap

    from neuronize.presenting.hunks import finding_label

    lines = [f"# {display}, hunk {number} (line {hunk.old_start + 1}):"]
    for note in [*hunk.notes, *(finding_label(f) for f in hunk.findings)]:
        lines += textwrap.wrap(note, HEADER_WIDTH, initial_indent="#   ", subsequent_indent="#     ",
                               break_long_words=False, break_on_hyphens=False)
    return lines
