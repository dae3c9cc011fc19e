"""Unified diffs that `git apply` and `patch -p1` accept, byte-faithful to the file.

Lines keep their own endings (CRLF stays CRLF inside the hunk lines), and a missing final newline
gets the standard ``\\ No newline at end of file`` marker.
"""

from __future__ import annotations

import codecs
import difflib
import io
import tokenize

NO_NEWLINE = "\\ No newline at end of file\n"


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


def unified_diff(display: str, before: bytes, after: bytes, context: int = 3) -> str:
    """The diff of one file, with ``a/`` and ``b/`` prefixes (``git apply`` style)."""
    old, new = _lines(decode(before)), _lines(decode(after))
    out: list[str] = []
    for line in difflib.unified_diff(old, new, f"a/{display}", f"b/{display}", n=context, lineterm="\n"):
        if line.startswith(("---", "+++")):
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE)
    return "".join(out)
