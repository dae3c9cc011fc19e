"""A line the migration writes stays within the project's line length, wrapped as black wraps.

The limit is the project's own (``Options.line_length``: ruff's or black's ``line-length``,
flake8's ``max-line-length``, read by :mod:`neuronize.sources.line_length`), else the file's
longest line, at least 88. Each physical line this run changed that runs past it is split the
way black splits a line, one level at a time until every line fits (or no split shortens it):

1. a line that holds two or more elements of a bracket opened on an earlier line (arguments,
   parameters, items) puts each on a line of its own, at the line's indentation (with a trailing
   comma when the bracket's last element is among them): black's split at commas;
2. a line that is a conditional or boolean expression alone inside brackets (or an operand of
   one already broken, after its ``if`` / ``else`` / ``and`` / ``or``) breaks before each ``if`` /
   ``else`` (each ``and`` / ``or`` of one chain);
3. otherwise the bracket on the line that closes last (the outermost of those closing at the same
   place: a call's, a parenthesized value's, a display's, a ``def``'s parameters) holds its
   contents on a line of their own, one level deeper than the line (black's "right-hand split")::

       model = torch.compile(
           model, backend="neuron" if on_neuron() else "inductor", dynamic=False
       )

   A conditional, boolean, comparison or arithmetic value with no bracket of its own (an
   assignment's or an argument's value, a condition) is that bracket once it has parentheses
   (black's invisible parentheses). A bracket whose split would not shorten the line is passed
   over for the one before it.

The line may be a whole statement or one line of a statement its author already spread over
several (an argument line, a ``).to(...)`` continuation): the split starts from that line's own
indentation. Quotes and comments are kept; a line the run did not change is the author's.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from neuronize.analysis.walk import children

#: the limit when the project sets none: black's default; a file with longer lines keeps its own
DEFAULT = 88
#: splits one level deeper per round; black's nesting of a migrated line is a handful of levels
_ROUNDS = 12

_Edit = Callable[[cst.CSTNode], cst.CSTNode]


def limit_for(source: bytes, configured: int | None) -> int:
    """The line length of a file: the project's, else its longest line (at least :data:`DEFAULT`)."""
    if configured is not None:
        return configured
    longest = max((len(line.rstrip(b"\r")) for line in source.split(b"\n")), default=0)
    return max(DEFAULT, longest)


def added_long_line(code: str, source: bytes, encoding: str, limit: int) -> bool:
    """Whether ``code`` (a rewrite of ``source``) has a line longer than ``limit`` that ``source``
    does not have: the only lines :func:`wrap_long_lines` may split."""
    old = set(source.decode(encoding, "replace").splitlines())
    return any(len(line) > limit and line not in old for line in code.splitlines())


def wrap_long_lines(module: cst.Module, source: bytes, limit: int) -> cst.Module:
    """``module`` (a rewrite of ``source``) with the lines this run wrote that run past ``limit``
    split as black would; ``module`` itself when every line fits."""
    for _ in range(_ROUNDS):
        edits = _splits(module, source, limit)
        if not edits:
            break
        result = module.visit(_Edits(edits))
        assert isinstance(result, cst.Module)
        module = result
    return module


class _Edits(cst.CSTTransformer):
    def __init__(self, edits: dict[int, list[_Edit]]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        for edit in self.edits.get(id(original_node), ()):
            updated_node = edit(updated_node)
        return updated_node


# -- where a line can be split ------------------------------------------------------------------
@dataclass
class _Bracket:
    """A bracket a split opens: ``node`` owns it, ``kind`` says how (``call``, ``parens``: the
    value's own parentheses, ``added``: parentheses the split gives a value, ``display``,
    ``params``: a ``def``'s, whose node is the ``def``), ``open`` / ``close`` are the text offsets
    of its two brackets (of the value's first and last character for ``added``)."""

    node: cst.CSTNode
    kind: str
    open: int
    close: int
    #: each element with its start and end (its comma left out)
    elements: list[tuple[cst.CSTNode, int, int]] = field(default_factory=list)


#: displays, by the names of their brackets
_DISPLAYS = {cst.List: ("lbracket", "rbracket"), cst.ListComp: ("lbracket", "rbracket"),
             cst.Dict: ("lbrace", "rbrace"), cst.DictComp: ("lbrace", "rbrace"),
             cst.Set: ("lbrace", "rbrace"), cst.SetComp: ("lbrace", "rbrace")}
#: values black gives invisible parentheses to split in (a call, a name... split elsewhere)
_BARE = (cst.IfExp, cst.BooleanOperation, cst.BinaryOperation, cst.Comparison, cst.Tuple)
#: the fields that hold such a value: a statement's value or condition, an argument, an item
_VALUE_FIELDS = {cst.Assign: "value", cst.AnnAssign: "value", cst.AugAssign: "value", cst.Return: "value",
                 cst.Assert: "test", cst.If: "test", cst.While: "test", cst.For: "iter", cst.Arg: "value", cst.Element: "value",
                 cst.DictElement: "value", cst.Param: "default"}
_ALTERNATIVES = (cst.IfExp, cst.BooleanOperation)
#: displays whose contents split before their ``for`` and ``if`` clauses, not at commas
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp)
#: what starts the line of an operand of a conditional or boolean expression already broken
_KEYWORDS = ("if", "else", "and", "or")


def _syntax(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and the syntax nodes under it, but not into a string (an f-string's expressions
    are the string's: a line break there is a syntax error before Python 3.12)."""
    yield node
    if not isinstance(node, (cst.FormattedString, cst.ConcatenatedString)):
        for child in children(node):
            yield from _syntax(child)


def _elements(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What a bracket holds between its commas: arguments, parameters, items."""
    if isinstance(node, cst.Call):
        return list(node.args)
    if isinstance(node, cst.Parameters):
        slash = [node.posonly_ind] if isinstance(node.posonly_ind, cst.CSTNode) else []
        star = [node.star_arg] if isinstance(node.star_arg, cst.CSTNode) else []
        kwargs = [node.star_kwarg] if node.star_kwarg is not None else []
        return [*node.posonly_params, *slash, *node.params, *star, *node.kwonly_params, *kwargs]
    return list(getattr(node, "elements", ()))


def _last_token(element: cst.CSTNode) -> cst.CSTNode:
    """The node an element ends with (its comma and the whitespace after it aside)."""
    if isinstance(element, cst.Param):
        return element.default or (element.annotation.annotation if element.annotation else element.name)
    if isinstance(element, (cst.ParamStar, cst.ParamSlash)):
        return element
    return element.value  # type: ignore[attr-defined]


_SPACE = frozenset(" \t\f\r\n\\")


def _inside(text: str, start: int, end: int, parens: int) -> tuple[int, int]:
    """The offsets of the code inside a node's ``parens`` parentheses (``start`` and ``end``:
    the node's own, its first "(" and after its last ")")."""
    for _ in range(parens):
        start, end = start + 1, end - 1
        while start < end and text[start] in _SPACE:
            start += 1
        while end > start and text[end - 1] in _SPACE:
            end -= 1
    return start, end


_Alternative = cst.IfExp | cst.BooleanOperation


def _brackets(module: cst.Module) -> tuple[list[_Bracket], list[tuple[_Alternative, int, int, bool]], str]:
    """Every bracket of the module; every conditional or boolean value with the offsets of its code
    (inside its parentheses) and whether a bracket holds it alone (a call's sole argument, a
    parenthesized value); the module's code."""
    nodes: list[cst.CSTNode] = []
    bare: set[int] = set()
    alternatives: list[_Alternative] = []
    alone: set[int] = set()
    defs: dict[int, cst.FunctionDef] = {}
    for node in _syntax(module):
        nodes.append(node)
        if isinstance(node, cst.FunctionDef):
            defs[id(node.params)] = node
        if type(node) in _VALUE_FIELDS:
            value = getattr(node, _VALUE_FIELDS[type(node)])
            if isinstance(value, _BARE) and not value.lpar:
                bare.add(id(value))
        if isinstance(node, cst.Call) and len(node.args) == 1 and not node.args[0].keyword \
                and not node.args[0].star:
            alone.add(id(node.args[0].value))
        elif isinstance(node, _ALTERNATIVES):
            alternatives.append(node)
        nodes.extend(_last_token(e) for e in _elements(node))
    from neuronize.analysis.positions import code_offsets

    offsets, text = code_offsets(module, nodes)
    found = []
    for node in nodes:
        if id(node) not in offsets:
            continue
        start, end = offsets[id(node)]
        lpar = len(node.lpar) if isinstance(node, cst.BaseExpression) else 0
        inner_start, inner_end = _inside(text, start, end, lpar)
        elements = [(e, offsets[id(e)][0], offsets[id(_last_token(e))][1]) for e in _elements(node)]
        if lpar:
            found.append(_Bracket(node, "parens", start, end - 1, elements if isinstance(node, cst.Tuple) else []))
        if id(node) in bare:
            found.append(_Bracket(node, "added", start, inner_end - 1))
        if isinstance(node, cst.Call) and node.args:
            found.append(_Bracket(node, "call", offsets[id(node.func)][1], inner_end - 1, elements))
        elif type(node) in _DISPLAYS:
            found.append(_Bracket(node, "display", inner_start, inner_end - 1, elements))
        elif isinstance(node, cst.Parameters) and elements and id(node) in defs:
            before = defs[id(node)].whitespace_before_params
            opened = start - 1 - len(before.value) if isinstance(before, cst.SimpleWhitespace) else -1
            found.append(_Bracket(defs[id(node)], "params", opened, end, elements))
    spans = [(node, *_inside(text, *offsets[id(node)], len(node.lpar)), bool(node.lpar) or id(node) in alone)
             for node in alternatives]
    return found, spans, text


# -- the splits -----------------------------------------------------------------------------------
def _newline(margin: str) -> cst.ParenthesizedWhitespace:
    """A line break, the next line at ``margin`` (the whole indentation, not added to the block's:
    a line inside a statement keeps its own)."""
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=False,
                                       last_line=cst.SimpleWhitespace(margin))


def _opened(node: cst.CSTNode, kind: str, margin: str, step: str) -> cst.CSTNode:
    """``node`` (the owner of a bracket of ``kind``, as the edit finds it) with the bracket's
    contents on a line of their own, one ``step`` deeper than ``margin``."""
    inner, outer = _newline(margin + step), _newline(margin)
    if kind == "added":
        return node.with_changes(lpar=[cst.LeftParen(whitespace_after=inner)],
                                 rpar=[cst.RightParen(whitespace_before=outer)])
    if kind == "params":
        assert isinstance(node, cst.FunctionDef)
        last = _elements(node.params)[-1]
        ends = "whitespace_after_param" if isinstance(last, cst.Param) else "whitespace_after"
        params = node.params.visit(_Edits({id(last): [partial(_with, **{ends: outer})]}))
        return node.with_changes(whitespace_before_params=inner, params=params)
    if kind == "call":
        assert isinstance(node, cst.Call)
        args = list(node.args)
        value = args[-1].value
        if len(args) == 1 and not args[-1].keyword and isinstance(value, _ALTERNATIVES):
            value = value.with_changes(lpar=[], rpar=[])  # the call's brackets serve as the value's
        # the contents on one line: a trailing comma of the author's one-line call is dropped
        args[-1] = args[-1].with_changes(value=value, comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=outer)
        return node.with_changes(whitespace_before_args=inner, args=args)
    if kind == "display":
        opening, closing = _DISPLAYS[type(node)]
        return node.with_changes(**{opening: getattr(node, opening).with_changes(whitespace_after=inner),
                                    closing: getattr(node, closing).with_changes(whitespace_before=outer)})
    lpar, rpar = list(node.lpar), list(node.rpar)  # type: ignore[attr-defined]
    lpar[0] = lpar[0].with_changes(whitespace_after=inner)
    rpar[-1] = rpar[-1].with_changes(whitespace_before=outer)
    return node.with_changes(lpar=lpar, rpar=rpar)


def _clauses_apart(node: cst.CSTNode, kind: str, margin: str, step: str) -> cst.CSTNode:
    """A comprehension opened (see :func:`_opened`) whose contents are too long for one line: its
    ``for`` and ``if`` clauses each on a line of their own, as black splits it."""
    opened = _opened(node, kind, margin, step)
    assert isinstance(opened, _COMPREHENSIONS)
    line = _newline(margin + step)

    def apart(clause: cst.CompFor) -> cst.CompFor:
        inner = clause.inner_for_in
        return clause.with_changes(whitespace_before=line, ifs=[c.with_changes(whitespace_before=line) for c in clause.ifs],
                                   inner_for_in=apart(inner) if inner is not None else None)

    return opened.with_changes(for_in=apart(opened.for_in))


def _with(node: cst.CSTNode, **changes: object) -> cst.CSTNode:
    return node.with_changes(**changes)


def _exploded(node: cst.CSTNode, kind: str, margin: str, step: str) -> cst.CSTNode:
    """``node`` (the owner of a bracket of ``kind``) with its bracket's elements one a line, a
    trailing comma after the last (black's split at commas, the whole bracket)."""
    opened = _opened(node, kind, margin, step)
    elements = _elements(opened.params if isinstance(opened, cst.FunctionDef) else opened)
    edits: dict[int, list[_Edit]] = {id(e): [partial(_broken_after, margin=margin + step)] for e in elements[:-1]}
    generator = isinstance(elements[-1], cst.Arg) and isinstance(elements[-1].value, cst.GeneratorExp) \
        and not elements[-1].value.lpar  # `f(x for x in y,)` is a syntax error
    if not generator:
        edits[id(elements[-1])] = [_with_comma]
    return opened.visit(_Edits(edits))  # type: ignore[return-value]


def _broken_after(element: cst.CSTNode, margin: str) -> cst.CSTNode:
    """``element`` with a line break after its comma, the next line at ``margin``."""
    comma = element.comma  # type: ignore[attr-defined]
    before = comma.whitespace_before if isinstance(comma, cst.Comma) else cst.SimpleWhitespace("")
    changes: dict[str, object] = {"comma": cst.Comma(whitespace_before=before, whitespace_after=_newline(margin))}
    for name in ("whitespace_after_arg", "whitespace_after_param", "whitespace_after"):
        if hasattr(element, name):
            changes[name] = cst.SimpleWhitespace("")
    return element.with_changes(**changes)


def _with_comma(element: cst.CSTNode) -> cst.CSTNode:
    """``element`` with black's magic trailing comma (the bracket closes on the next line)."""
    if isinstance(element.comma, cst.Comma):  # type: ignore[attr-defined]
        return element
    return element.with_changes(comma=cst.Comma())


def _at_operators(expr: cst.CSTNode, margin: str) -> cst.CSTNode:
    """``expr`` with a line break before each ``if`` / ``else`` (each ``and`` / ``or`` of one
    chain), as black splits a bracket's contents at its operators."""
    if isinstance(expr, cst.IfExp):
        orelse = expr.orelse
        if isinstance(orelse, cst.IfExp) and not orelse.lpar:  # a chain: a if x else b if y else c
            orelse = _at_operators(orelse, margin)  # type: ignore[assignment]
        return expr.with_changes(whitespace_before_if=_newline(margin), whitespace_before_else=_newline(margin),
                                 orelse=orelse)
    assert isinstance(expr, cst.BooleanOperation)
    left = expr.left
    if isinstance(left, cst.BooleanOperation) and type(left.operator) is type(expr.operator) and not left.lpar:
        left = _at_operators(left, margin)  # type: ignore[assignment]
    return expr.with_changes(left=left, operator=expr.operator.with_changes(whitespace_before=_newline(margin)))


# -- one round --------------------------------------------------------------------------------------
def _code_width(line: str) -> int:
    """The width of ``line`` without the author's comment at its end."""
    if "#" in line:
        try:
            for token in tokenize.generate_tokens(io.StringIO(line).readline):
                if token.type == tokenize.COMMENT:
                    return len(line[:token.start[1]].rstrip())
        except (tokenize.TokenError, SyntaxError):
            pass
    return len(line.rstrip())


_NEWLINE = re.compile(r"\r\n?|\n")


def _long_lines(module: cst.Module, source: bytes, limit: int) -> list[int]:
    """The 0-based numbers of the lines of ``module``'s code this run changed that run past ``limit``."""
    from neuronize.analysis.positions import line_ops

    encoding = module.encoding
    new = module.code.encode(encoding, "surrogateescape").splitlines()
    long: list[int] = []
    for tag, _, _, j1, j2 in line_ops(source.splitlines(), new):
        if tag != "equal":
            long.extend(j for j in range(j1, j2) if len(new[j]) > limit
                        and _code_width(new[j].decode(encoding, "surrogateescape")) > limit)
    return long


def _splits(module: cst.Module, source: bytes, limit: int) -> dict[int, list[_Edit]]:
    """The edits that split each long line this run wrote one level (none when all fit)."""
    long = _long_lines(module, source, limit)
    if not long:
        return {}
    brackets, alternatives, text = _brackets(module)
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    def indentation(number: int) -> str:
        line = text[starts[number]:starts[number + 1] if number + 1 < len(starts) else len(text)]
        return line[:len(line) - len(line.lstrip(" \t\f"))]

    edits: dict[int, list[_Edit]] = {}
    step = module.default_indent
    for number in long:
        begin = starts[number]
        finish = starts[number + 1] if number + 1 < len(starts) else len(text)
        line = _NEWLINE.sub("", text[begin:finish])
        margin = indentation(number)
        first, width = begin + len(margin), _code_width(line)
        last = begin + width  # where the line's code ends

        def add(node: cst.CSTNode, edit: _Edit) -> None:
            edits.setdefault(id(node), []).append(edit)

        split = _at_commas(brackets, first, last, text, line_of, number, margin)
        if split:
            for node, edit in split:
                add(node, edit)
            continue
        expr = next((n for n, s, e, held in alternatives if first <= s and e <= last
                     and text[e:last].strip() in ("", ",")
                     and (text[first:s].strip() in _KEYWORDS and not n.lpar or s == first and held)), None)
        if expr is not None:
            add(expr, partial(_at_operators, margin=margin))
            continue
        # a bracket over several lines that shares this line with its elements: opened here, its
        # first elements beside it, or closed here after its last (an author's hanging layout)
        hanging = [b for b in brackets if b.elements and line_of(b.open) != line_of(b.close) and (
            line_of(b.open) == number and line_of(b.elements[0][1]) == number
            or line_of(b.close) == number and line_of(b.elements[-1][2]) == number and b.elements[-1][1] >= first)]
        if hanging:
            bracket = min(hanging, key=lambda b: b.open)
            # the split starts from the line the bracket opens on
            add(bracket.node, partial(_exploded, kind=bracket.kind, margin=indentation(line_of(bracket.open)),
                                      step=step))
            continue
        on_line = sorted((b for b in brackets if begin <= b.open < b.close < last and line_of(b.close) == number),
                         key=lambda b: (-b.close, b.open))
        for bracket in on_line:
            if bracket.kind == "added" and _parentheses_left_out(bracket, on_line, begin, limit):
                continue
            head, tail = bracket.open - begin + 1, len(margin) + last - bracket.close
            body = len(margin) + len(step) + bracket.close - bracket.open - 1 + 2 * (bracket.kind == "added")
            # a body still too long is split in turn, at its commas or operators
            comprehension = isinstance(bracket.node, _COMPREHENSIONS)
            splits_further = len(bracket.elements) > 1 or isinstance(bracket.node, _ALTERNATIVES) or comprehension
            if max(head, tail) < width and (body < width or splits_further):
                opens = _clauses_apart if comprehension and body > limit else _opened
                add(bracket.node, partial(opens, kind=bracket.kind, margin=margin, step=step))
                break
    return edits


def _parentheses_left_out(added: _Bracket, on_line: list[_Bracket], begin: int, limit: int) -> bool:
    """Whether the parentheses a split would give a value are left out for the bracket the value
    ends with, as black leaves out its invisible parentheses: one operator (not a conditional),
    and the line up to that bracket fits."""
    value = added.node
    if isinstance(value, cst.Comparison):
        single = len(value.comparisons) == 1
    elif isinstance(value, (cst.BinaryOperation, cst.BooleanOperation)):
        single = not (type(value.left) is type(value) and not value.left.lpar)
    else:
        single = False
    return single and any(b.kind != "added" and b.close == added.close and b.open - begin < limit for b in on_line)


def _at_commas(brackets: list[_Bracket], first: int, last: int, text: str, line_of: Callable[[int], int],
               number: int, margin: str) -> list[tuple[cst.CSTNode, _Edit]]:
    """The edits that put each element of a bracket opened above line ``number`` that the line
    holds (two or more, and nothing else) on a line of its own."""
    for bracket in brackets:
        if not bracket.elements or line_of(bracket.open) >= number:
            continue
        held = [(e, s, end) for e, s, end in bracket.elements if s >= first and end <= last]
        if len(held) < 2 or held[0][1] != first or text[held[-1][2]:last].strip() not in ("", ","):
            continue
        edits: list[tuple[cst.CSTNode, _Edit]] = [
            (e, partial(_broken_after, margin=margin)) for e, _, _ in held[:-1]]
        if held[-1][0] is bracket.elements[-1][0] and line_of(bracket.close) > number:
            edits.append((held[-1][0], _with_comma))
        return edits
    return []
