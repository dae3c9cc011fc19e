"""Strings a fix inserts are written in the quote style around them, not always in double quotes.

A new string follows the string it replaces (``torch.device('cuda')`` becomes
``torch.device('neuron')``), else a string of the code it rewrites; where that code has none
(``.cuda()`` -> ``.to(...)``), it follows the file: single quotes when most of the file's one-line string literals use them.
Only plain literals (no prefix, no escapes, no quote of the other kind inside) are re-quoted, so
the value never changes.
"""

from __future__ import annotations

import re

import libcst as cst

from neuronize.analysis.walk import visit

_TRIPLE = re.compile(rb"'''|\"\"\"")
_COMMENT = re.compile(rb"#[^\n'\"]*$", re.MULTILINE)
_LITERAL = re.compile(rb"""(?<![\w'"])(['"])[^'"\\\n]*\1""")


def file_quote(source: bytes) -> str:
    """``'`` when most one-line string literals of ``source`` use single quotes, else ``"``.

    A cheap count on the bytes (triple quotes and trailing comments left out), not a tokenizer:
    it only chooses a style for new strings, and ties go to double quotes.
    """
    text = _COMMENT.sub(b"", _TRIPLE.sub(b"", source))
    single = double = 0
    for match in _LITERAL.finditer(text):
        if match.group(1) == b"'":
            single += 1
        else:
            double += 1
    return "'" if single > double else '"'


def _strings(node: cst.CSTNode) -> list[cst.SimpleString]:
    found: list[cst.SimpleString] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            found.append(string)

    visit(node, Collect())
    return found


def requote(original: cst.CSTNode, replacement: cst.CSTNode, file_style: str) -> cst.CSTNode:
    """``replacement`` with the strings it adds to ``original`` in the surrounding quote style."""
    before = _strings(original)
    after = _strings(replacement)
    kept_ids = {id(s) for s in before} & {id(s) for s in after}
    # the quote of a string the fix replaces, else of one it keeps, else the file's
    replaced = [s for s in before if id(s) not in kept_ids] + before
    style = next((s.quote for s in replaced if s.quote in ("'", '"')), file_style)
    if all(id(s) in kept_ids or not _convertible(s, style) for s in after):
        return replacement

    class Requote(cst.CSTTransformer):
        def leave_SimpleString(self, before: cst.SimpleString, after: cst.SimpleString
                               ) -> cst.SimpleString:
            if id(before) in kept_ids or not _convertible(before, style):
                return after
            return after.with_changes(value=f"{style}{before.raw_value}{style}")

    result = replacement.visit(Requote())
    assert isinstance(result, cst.CSTNode)
    return result


def _convertible(string: cst.SimpleString, style: str) -> bool:
    return (string.quote in ("'", '"') and string.quote != style and string.prefix == ""
            and "\\" not in string.raw_value and "'" not in string.raw_value
            and '"' not in string.raw_value)
