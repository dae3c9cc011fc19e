"""Line and column of reported nodes, for a fraction of what libcst's PositionProvider costs.

PositionProvider records a range for every node of the module (about 2.5 parses, measured);
findings need a handful. This renders the module once (``module.code`` costs about a quarter of a
parse) and notes the text offset where each reported node starts and ends, then skips the
whitespace and comments a node owns (a statement's blank and comment lines, its indentation), so a
finding points at the node's first token, as PositionProvider's syntactic positions do.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import os
import re
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from neuronize.types import Finding

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
    def __init__(self, module: cst.Module, targets: set[int], whole: bool = True) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self._targets = targets
        #: targets not rendered yet, when the rendering may stop after the last of them
        self._left = None if whole else len(targets)
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
            if self._left is not None:
                self._left -= 1
                if not self._left:
                    raise _AllPlaced


class _AllPlaced(Exception):
    """Every target is placed: the rest of the module need not be rendered."""


def code_offsets(module: cst.Module, nodes: Iterable[cst.CSTNode], whole: bool = True
                 ) -> tuple[dict[int, tuple[int, int]], str]:
    """Where each of ``nodes`` starts and ends (text offsets, keyed by ``id(node)``, what the node
    renders included: its parentheses, and the whitespace and comma it owns) in the code
    ``module`` renders to, and that code: one rendering for all of them. ``whole=False``: the
    rendering stops after the last of ``nodes``, and the code returned ends there."""
    state = _Locator(module, {id(n) for n in nodes}, whole)
    try:
        module._codegen(state)
    except _AllPlaced:
        pass
    return {key: (start, end) for key, (start, end) in state.offsets.items()}, "".join(state.tokens)


def locate_in_code(module: cst.Module, nodes: Iterable[cst.CSTNode], whole: bool = True
                   ) -> tuple[dict[int, Span], str | None]:
    """The spans of ``nodes`` (keyed by ``id(node)``) in the code ``module`` renders to, and that
    code (``module.code``): the engine needs both when it rewrites the module, and each rendering
    costs about a quarter of a parse. ``whole=False`` (only the spans are wanted): the rendering
    stops after the last node, and no code is returned."""
    by_id = {id(n): n for n in nodes}
    # A decorated def/class starts at its keyword, not at its first decorator (as in libcst):
    # locate its name too, and go back to the start of that line.
    named = [n for n in by_id.values() if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.decorators]
    names = {id(n.name): id(n) for n in named}
    offsets, text = code_offsets(module, [*by_id.values(), *(n.name for n in named)], whole)
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def position(offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(line_starts, offset) - 1
        return index + 1, offset - line_starts[index] + 1

    def skip(offset: int) -> int:
        return _SKIPPABLE.match(text, offset).end()  # type: ignore[union-attr]

    spans = {}
    for key, node in by_id.items():
        start, end = offsets[key]
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
            line_start = line_starts[bisect.bisect_right(line_starts, offsets[name_key][0]) - 1]
            start = _INDENT.match(text, line_start).end()  # type: ignore[union-attr]
        spans[key] = Span(*position(start), *position(end))
    return spans, text if whole else None


def on_changed_lines(module: cst.Module, source: bytes, nodes: Iterable[cst.CSTNode]) -> set[int]:
    """The ids of ``nodes`` (of ``module``, a rewrite of ``source``) that start on a line the
    rewrite changed: what a run wrote, as opposed to the same code written by hand."""
    nodes = list(nodes)
    spans, code = locate_in_code(module, nodes)
    assert code is not None
    old, new = source.splitlines(), code.encode(module.encoding, "surrogateescape").splitlines()
    changed = {j + 1 for tag, _, _, j1, j2 in line_ops(old, new) if tag != "equal" for j in range(j1, j2)}
    return {id(n) for n in nodes if spans[id(n)].line in changed}


# -- positions in the file as written -----------------------------------------------------------
def position_map(before: bytes, after: bytes) -> Callable[[int, int], tuple[int, int]]:
    """Map a 1-based (line, column) of ``before`` to where that text (or what replaced it) is in
    ``after``: unchanged lines move by the lines inserted or removed above them; in a changed
    line, the column follows the characters kept (an edit before it on the line moves it)."""
    from neuronize.sources.lines import byte_lines, encoding_of

    old, new = byte_lines(before), byte_lines(after)
    ops = line_ops(old, new)
    encoding = encoding_of(before)

    def mapped(line: int, column: int) -> tuple[int, int]:
        i = line - 1
        for tag, i1, i2, j1, j2 in ops:
            if not i1 <= i < i2:
                continue
            if tag == "equal":
                return j1 + (i - i1) + 1, column
            if j1 == j2:  # the line was deleted: the start of what follows
                return j1 + 1, 1
            text = old[i].decode(encoding, "replace")
            j = counterpart(text, new, j1, j2, i - i1, encoding)
            if j is None:
                return min(j1 + i - i1, j2 - 1) + 1, 1
            # the statement it became, to the line the next old line became: an edit may have
            # laid it out over several lines
            after_it = counterpart(old[i + 1].decode(encoding, "replace"), new, j1, j2, i + 1 - i1, encoding) \
                if i + 1 < i2 else None
            became = "".join(n.decode(encoding, "replace") for n in new[j:after_it if after_it and after_it > j else j2])
            at = _column(text, became, column) - 1
            return j + became.count("\n", 0, at) + 1, at - (became.rfind("\n", 0, at) + 1) + 1
        return line, column

    return mapped


def counterpart(text: str, lines: Sequence[bytes], start: int, stop: int, offset: int,
                encoding: str) -> int | None:
    """The line of ``lines[start:stop]`` (a replacement block) that ``text`` became: the one that
    opens as it does (a statement the edit split over lines starts on it), else the most similar
    one (an edit keeps most of a line; in a long block, the line at the same ``offset``), or None
    when none is similar enough (the line was removed, not edited)."""
    candidates = range(start, stop) if stop - start <= 50 else [min(start + offset, stop - 1)]
    opening = max(candidates, key=lambda k: (_common_start(text, lines[k].decode(encoding, "replace")), -k))
    if _common_start(text, lines[opening].decode(encoding, "replace")) >= _OPENING:
        return opening
    score, best = max(((difflib.SequenceMatcher(None, text, lines[k].decode(encoding, "replace"),
                                                autojunk=False).ratio(), k) for k in candidates),
                      key=lambda pair: (pair[0], -pair[1]))  # a tie: the first line
    return best if score >= 0.5 else None


#: how many characters a line and the line it became share at their start (past the same
#: indentation), at least, for that to tell them apart from the lines around (a helper defined
#: above it, the rest of a split statement)
_OPENING = 8


def _common_start(a: str, b: str) -> int:
    code = a.lstrip()
    if a[: len(a) - len(code)] != b[: len(b) - len(b.lstrip())]:
        return 0
    return len(os.path.commonprefix([code, b.lstrip()]))


#: how far apart (old lines + new lines) two stretches of equal lines may be re-synchronised
_WINDOW = 400
_SYNC = 3  # equal lines in a row that re-synchronise the two files


def line_ops(old: Sequence[bytes], new: Sequence[bytes]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes of two line lists, in time linear in their length for the local
    edits fixes make (difflib's matcher is quadratic-ish on a large file of unique lines: 12 s
    for 1 MB). After a difference, the nearest point where ``_SYNC`` lines agree again is
    searched within ``_WINDOW`` lines; beyond that, the rest is one replacement."""
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    n, m = len(old), len(new)
    while i < n and j < m:
        start_i, start_j = i, j
        while i < n and j < m and old[i] == new[j]:
            i += 1
            j += 1
        if i > start_i:
            ops.append(("equal", start_i, i, start_j, j))
            continue
        sync = _resync(old, new, i, j)
        if sync is None:
            break
        di, dj = sync
        ops.extend(_refined(old, new, i, i + di, j, j + dj))
        i, j = i + di, j + dj
    ops.extend(_refined(old, new, i, n, j, m))
    return ops


def _refined(old: Sequence[bytes], new: Sequence[bytes], i1: int, i2: int, j1: int, j2: int
             ) -> list[tuple[str, int, int, int, int]]:
    """The differing stretch ``old[i1:i2]`` / ``new[j1:j2]`` (short, but for a large rewrite) as
    difflib's opcodes: the lines it still has in common are matched."""
    if i1 == i2 and j1 == j2:
        return []
    if i1 == i2 or j1 == j2 or (i2 - i1) * (j2 - j1) > 250_000:
        return [("replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert", i1, i2, j1, j2)]
    matcher = difflib.SequenceMatcher(None, old[i1:i2], new[j1:j2], autojunk=False)
    return [(tag, i1 + a1, i1 + a2, j1 + b1, j1 + b2) for tag, a1, a2, b1, b2 in matcher.get_opcodes()]


def _resync(old: Sequence[bytes], new: Sequence[bytes], i: int, j: int) -> tuple[int, int] | None:
    n, m = len(old), len(new)
    for distance in range(1, _WINDOW + 1):
        for di in range(max(0, distance - (m - j)), min(distance, n - i) + 1):
            dj = distance - di
            k = min(_SYNC, n - i - di, m - j - dj)
            if k > 0 and old[i + di:i + di + k] == new[j + dj:j + dj + k]:
                return di, dj
        if distance > (n - i) + (m - j):
            return None
    return None


def _column(old: str, new: str, column: int) -> int:
    """Where 1-based ``column`` of ``old`` is in ``new`` (a replaced stretch: its start)."""
    c = column - 1
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if i1 <= c < i2:
            return (j1 + (c - i1) if tag == "equal" else j1) + 1
    return min(c, len(new)) + 1


def as_written(findings: Iterable[Finding], before: bytes, after: bytes) -> tuple[Finding, ...]:
    """``findings`` of ``before`` at their line and column in ``after`` (the file as written)."""
    mapped = position_map(before, after)
    out = []
    for f in findings:
        line, column = mapped(f.line, f.column)
        end_line, end_column = mapped(f.end_line, f.end_column) if f.end_line else (0, 0)
        if (end_line, end_column) < (line, column):
            end_line, end_column = line, column
        out.append(dataclasses.replace(f, line=line, column=column, end_line=end_line,
                                       end_column=end_column))
    return tuple(out)
