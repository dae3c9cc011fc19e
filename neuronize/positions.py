"""Line and column of reported nodes, for a fraction of what libcst's PositionProvider costs.

PositionProvider records a range for every node of the module (about 2.5 parses, measured);
findings need a handful. This renders the module once (``module.code`` costs about a quarter of a
parse) and notes the text offset where each reported node starts and ends, then skips the
whitespace and comments a node owns (a statement's blank and comment lines, its indentation), so a
finding points at the node's first token, as PositionProvider's syntactic positions do.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from collections.abc import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")
_INDENT = re.compile(r"[ \t\f]*")
_SKIPPABLE = re.compile(r"(?:[ \t\f\r\n]+|\\\r?\n|#[^\r\n]*)*")


@dataclass(frozen=True)
class Span:
    """1-based line, 1-based column (in characters), end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class _Locator(CodegenState):
    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self._targets = targets
        self._counted = 0
        self._offset = 0
        self.offsets: dict[int, list[int]] = {}

    def _now(self) -> int:
        tokens = self.tokens
        for i in range(self._counted, len(tokens)):
            self._offset += len(tokens[i])
        self._counted = len(tokens)
        return self._offset

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self._targets:
            self.offsets[id(node)] = [self._now(), -1]

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self._targets:
            self.offsets[id(node)][1] = self._now()


def locate(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """Spans of ``nodes`` (keyed by ``id(node)``) in the code ``module`` renders to."""
    return locate_in_code(module, nodes)[0]


def locate_in_code(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> tuple[dict[int, Span], str]:
    """The spans of :func:`locate` and the code ``module`` renders to (``module.code``): the
    engine needs both, and each rendering costs about a quarter of a parse."""
    by_id = {id(n): n for n in nodes}
    # A decorated def/class starts at its keyword, not at its first decorator (as in libcst):
    # locate its name too, and go back to the start of that line.
    names = {id(n.name): id(n) for n in by_id.values()
             if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.decorators}
    state = _Locator(module, set(by_id) | set(names))
    module._codegen(state)
    text = "".join(state.tokens)
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def position(offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(line_starts, offset) - 1
        return index + 1, offset - line_starts[index] + 1

    def skip(offset: int) -> int:
        return _SKIPPABLE.match(text, offset).end()  # type: ignore[union-attr]

    spans = {}
    for key, node in by_id.items():
        start, end = state.offsets[key]
        start = min(skip(start), end)
        # Syntactic positions leave out the node's own parentheses.
        lpar = getattr(node, "lpar", None)
        parens = len(lpar) if isinstance(lpar, (list, tuple)) else 0
        for _ in range(parens):
            if text.startswith("(", start):
                start = min(skip(start + 1), end)
        for remaining in range(parens, -1, -1):
            while end > start and text[end - 1] in " \t\f\r\n":
                end -= 1
            if remaining and text[end - 1 : end] == ")":
                end -= 1
        name_key = id(getattr(node, "name", None))
        if name_key in names:
            line_start = line_starts[bisect.bisect_right(line_starts, state.offsets[name_key][0]) - 1]
            start = _INDENT.match(text, line_start).end()  # type: ignore[union-attr]
        spans[key] = Span(*position(start), *position(end))
    return spans, text
