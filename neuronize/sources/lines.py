"""A lossless line view of a text file, and span edits on it: the reader/writer every line-based
kind shares (requirements, pyproject, shell, Dockerfile, YAML/JSON configs).

Bytes -> text (UTF-8, a BOM kept as a character) -> lines, each with its own ending (``\\n``,
``\\r\\n``, ``\\r`` or none at the end of the file). Joining gives the bytes back exactly. An edit
replaces a span of one line's text; untouched lines are the same bytes. No parser reformats
anything: rules find what they need with small per-kind readers over these lines.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

_LINE_PATTERN = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z"
_LINE = re.compile(_LINE_PATTERN)
_BYTE_LINE = re.compile(_LINE_PATTERN.encode())


def byte_lines(data: bytes) -> list[bytes]:
    """The byte lines of ``data``, each with its own ending (``\\r\\n``, ``\\n`` or ``\\r``)."""
    return _BYTE_LINE.findall(data)


def encoding_of(source: bytes) -> str:
    """The encoding a Python source declares (PEP 263, a BOM), UTF-8 where it declares none or
    declares it badly; a BOM is not part of the text's encoding."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError:
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


class DecodeError(ValueError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Line:
    """One line: its text without the ending, and the ending (empty only for a last line)."""

    text: str
    ending: str


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``text[start:end]`` of line ``line`` (0-based) with ``new``; ``new`` may hold
    whole new lines (ending in the file's own newline, see :func:`newline_of`)."""

    line: int
    start: int
    end: int
    new: str


def decode(source: bytes) -> str:
    """The text of ``source`` (UTF-8; a BOM stays as ``\\ufeff``), or DecodeError naming the line."""
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        raise DecodeError(f"cannot decode as UTF-8 (byte 0x{source[exc.start]:02x})", line) from None


def split_lines(text: str) -> list[Line]:
    """Every line of ``text`` with its ending; ``"".join`` of them is ``text``."""
    out = []
    for match in _LINE.finditer(text):
        chunk = match.group()
        body = chunk.rstrip("\r\n")
        out.append(Line(body, chunk[len(body):]))
    return out


def newline_of(lines: Iterable[Line]) -> str:
    """The file's newline: the ending of its first line that has one (``\\n`` for none)."""
    return next((line.ending for line in lines if line.ending), "\n")


def join_lines(lines: Iterable[Line]) -> str:
    return "".join(line.text + line.ending for line in lines)


class OverlappingEdits(ValueError):
    pass


def apply_edits(lines: list[Line], edits: Iterable[Edit]) -> str:
    """The text of ``lines`` with ``edits`` made; overlapping edits on one line raise."""
    by_line: dict[int, list[Edit]] = {}
    for edit in sorted(set(edits)):
        by_line.setdefault(edit.line, []).append(edit)
    out = []
    for index, line in enumerate(lines):
        chosen = by_line.get(index, [])
        for left, right in zip(chosen, chosen[1:], strict=False):
            if right.start < left.end:
                raise OverlappingEdits(f"line {index + 1}: overlapping edits")
        text = line.text
        for edit in reversed(chosen):  # right to left: earlier offsets stay valid
            text = text[: edit.start] + edit.new + text[edit.end:]
        out.append(text + line.ending)
    return "".join(out)


def comment_start(text: str, prefix: str = "#") -> int | None:
    """Where a comment starts on a line of a shell-like kind (``#`` at the start or after
    whitespace, outside quotes), or None."""
    quote = ""
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif text.startswith(prefix, i) and (i == 0 or text[i - 1] in " \t"):
            return i
    return None


def code_part(text: str) -> str:
    """The line without its comment (the comment's text replaced by nothing)."""
    start = comment_start(text)
    return text if start is None else text[:start]
