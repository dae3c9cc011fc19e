"""A line the migration writes stays within the project's line length, wrapped as black wraps.

The limit is the project's own (``Options.line_length``: ruff's or black's ``line-length``,
flake8's ``max-line-length``, read by :mod:`neuronize.sources.line_length`), else the file's
longest line, at least 88. A statement this run changed that no longer fits on its line is
split the way black splits it (its "right-hand split"): the brackets of its last call hold their
contents on a line of their own::

    model = torch.compile(
        model, backend="neuron" if on_neuron() else "inductor", dynamic=False
    )

and, when that line is still too long, one argument a line with a trailing comma. A value with
no brackets of its own (a conditional expression, a boolean test) gets parentheses to split in.
The statement keeps its indentation, quotes and comments; a statement already over several lines,
or one whose line the run did not change, is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from neuronize.analysis.subtrees import code as _code, replaced
from neuronize.analysis.walk import children

#: the limit when the project sets none: black's default; a file with longer lines keeps its own
DEFAULT = 88


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


def _statements(node: cst.CSTNode, indent: str, default: str) -> Iterator[tuple[cst.CSTNode, str]]:
    """The simple statement lines and compound statements' headers under ``node``, with the
    indentation each starts at."""
    for child in children(node):
        if isinstance(child, cst.SimpleStatementLine):
            yield child, indent
        elif isinstance(child, cst.IndentedBlock):
            yield from _statements(child, indent + (child.indent if child.indent is not None else default), default)
        elif isinstance(child, (cst.With, cst.If, cst.While, cst.For, cst.Decorator)):
            yield child, indent
            yield from _statements(child, indent, default)
        elif isinstance(child, (cst.BaseCompoundStatement, cst.Else, cst.BaseSuite, cst.ExceptHandler, cst.Finally)):
            yield from _statements(child, indent, default)


def _header(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression a statement's line is made of, which a split opens."""
    if isinstance(stmt, cst.SimpleStatementLine):
        if len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        value = small.test if isinstance(small, cst.Assert) else getattr(small, "value", None)
        return value if isinstance(value, cst.BaseExpression) else None
    if isinstance(stmt, cst.With):
        return stmt.items[-1].item  # black splits the last bracket: the last item's
    if isinstance(stmt, cst.Decorator):
        return stmt.decorator
    if isinstance(stmt, (cst.If, cst.While)):
        return stmt.test
    if isinstance(stmt, cst.For):
        return stmt.iter
    return None


def _opened(depth: int, step: str) -> cst.ParenthesizedWhitespace:
    """A line break after an opening bracket, the next line one level deeper than ``depth``
    (levels of brackets split above it, in the statement)."""
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                       last_line=cst.SimpleWhitespace(step * (depth + 1)))


def _closing(depth: int, step: str) -> cst.ParenthesizedWhitespace:
    """A line break before a closing bracket, back at ``depth``."""
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                       last_line=cst.SimpleWhitespace(step * depth))


#: what each kind of bracketed collection calls its brackets
_BRACKETS = {cst.List: ("lbracket", "rbracket"), cst.Dict: ("lbrace", "rbrace"), cst.Set: ("lbrace", "rbrace")}


def _last_bracket(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The bracketed node whose closing bracket ends ``expr`` (a call, a parenthesized value, a
    list, dict or set display), where black's right-hand split opens the line; None if none."""
    while True:
        if getattr(expr, "lpar", ()):
            return expr
        if isinstance(expr, cst.Call) and expr.args:
            return expr
        if isinstance(expr, cst.Call):  # `x.to(d).t()`: an empty trailer holds nothing to open
            expr = expr.func
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, tuple(_BRACKETS)):
            return expr if expr.elements else None  # type: ignore[attr-defined]
        elif isinstance(expr, cst.ListComp):
            return expr
        elif isinstance(expr, (cst.Await, cst.UnaryOperation)):
            expr = expr.expression
        elif isinstance(expr, cst.Lambda):
            expr = expr.body
        elif isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison)):
            # the last operand with a bracket of its own (`(a if b else c) >= n` opens at its paren)
            operands = [expr.left, expr.right] if not isinstance(expr, cst.Comparison) else [
                expr.left, *(c.comparator for c in expr.comparisons)]
            return next((found for operand in reversed(operands) if (found := _last_bracket(operand))), None)
        else:
            return None


def _split_bracket(node: cst.BaseExpression, depth: int, step: str, one_per_line: bool,
                   room: int | None = None) -> cst.BaseExpression:
    """``node`` (see :func:`_last_bracket`) with its contents on a line of their own, or one
    element a line (with a trailing comma; a parenthesized condition: broken at its operators)."""
    if getattr(node, "lpar", ()):
        lpar, rpar = list(node.lpar), list(node.rpar)
        lpar[0] = lpar[0].with_changes(whitespace_after=_opened(depth, step))
        rpar[-1] = rpar[-1].with_changes(whitespace_before=_closing(depth, step))
        inner = node
        if one_per_line and isinstance(node, (cst.IfExp, cst.BooleanOperation)):
            inner = _at_operators(node, depth, step)
        return inner.with_changes(lpar=lpar, rpar=rpar)
    if isinstance(node, cst.Call):
        return _split_call(node, depth, step, one_per_line, room)
    if isinstance(node, cst.ListComp):
        return _split_comprehension(node, depth, step, one_per_line, room)
    opening, closing = _BRACKETS[type(node)]
    elements = list(node.elements)  # type: ignore[attr-defined]
    if one_per_line:
        elements = [e.with_changes(comma=cst.Comma(whitespace_after=_opened(depth, step))) for e in elements[:-1]] + [
            elements[-1].with_changes(comma=cst.Comma())]
    else:
        elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(**{
        "elements": elements,
        opening: getattr(node, opening).with_changes(whitespace_after=_opened(depth, step)),
        closing: getattr(node, closing).with_changes(whitespace_before=_closing(depth, step))})


def _split_comprehension(node: cst.ListComp, depth: int, step: str, one_per_line: bool,
                         room: int | None = None) -> cst.ListComp:
    """``[elt for ...]`` with its contents on a line of their own, or (as black does next) the
    element and each ``for`` on lines of their own, the element split in turn where it does not
    fit in ``room`` columns."""
    elt, loop = node.elt, node.for_in
    if one_per_line:
        loop = loop.with_changes(whitespace_before=_opened(depth, step))
        if room is not None and len(step) * (depth + 1) + len(_code(elt)) > room:
            elt = _nested(elt, depth + 1, step, room)
    return node.with_changes(elt=elt, for_in=loop, lbracket=node.lbracket.with_changes(whitespace_after=_opened(depth, step)),
                             rbracket=node.rbracket.with_changes(whitespace_before=_closing(depth, step)))


def _split_call(call: cst.Call, depth: int, step: str, one_per_line: bool, room: int | None = None) -> cst.Call:
    """``call`` with its arguments on a line of their own, or one a line (with a trailing comma);
    ``room``: the columns an argument's line has, past which that argument is split too."""
    args = list(call.args)
    if one_per_line:
        if room is not None:
            args = [a.with_changes(value=_lightest(a.value, depth + 1, step))
                    if len(_code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT))) + 1 > room else a for a in args]
        last = cst.Comma() if len(args) > 1 else cst.MaybeSentinel.DEFAULT  # black's magic trailing comma
        args = [a.with_changes(comma=cst.Comma(whitespace_after=_opened(depth, step))) for a in args[:-1]] + [
            args[-1].with_changes(comma=last, whitespace_after_arg=_closing(depth, step))]
    else:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_closing(depth, step))
    return call.with_changes(whitespace_before_args=_opened(depth, step), args=args)


def _parenthesized(expr: cst.BaseExpression, depth: int, step: str) -> cst.BaseExpression:
    return expr.with_changes(lpar=[cst.LeftParen(whitespace_after=_opened(depth, step))],
                             rpar=[cst.RightParen(whitespace_before=_closing(depth, step))])


def _splittable(expr: cst.BaseExpression) -> bool:
    return not getattr(expr, "lpar", ()) and isinstance(expr, (cst.IfExp, cst.BooleanOperation,
                                                                cst.BinaryOperation, cst.Comparison))


def _candidates(expr: cst.BaseExpression, step: str, room: int, depth: int = 0) -> Iterator[cst.BaseExpression]:
    """The splits of ``expr`` black would try, the lightest first; the last splits the arguments
    that still do not fit in ``room`` columns."""
    if isinstance(expr, cst.Tuple) and not expr.lpar and expr.elements:
        # a bare tuple (`a, b = x, y`): black splits it in parentheses of its own
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    bracket = _last_bracket(expr)
    if bracket is not None:
        for one_per_line, deeper in ((False, None), (True, None), (True, room)):
            split = _split_bracket(bracket, depth, step, one_per_line, deeper)
            yield split if bracket is expr else expr.deep_replace(bracket, split)
        yield _nested(expr, depth, step, room)
    if _splittable(expr):
        yield _parenthesized(expr, depth, step)
        if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
            yield _parenthesized(_at_operators(expr, depth, step), depth, step)
            yield _parenthesized(_at_operators(_operands_split(expr, depth, step, room), depth, step), depth, step)


def _operands_split(expr: cst.IfExp | cst.BooleanOperation, depth: int, step: str, room: int) -> cst.IfExp | cst.BooleanOperation:
    """``expr`` with each operand longer than ``room`` split in turn, one level down."""
    fields = ("body", "test", "orelse") if isinstance(expr, cst.IfExp) else ("left", "right")
    keyword = len("else ")  # the operator that starts the operand's line
    changes = {name: _lightest(getattr(expr, name), depth + 1, step) for name in fields
               if len(_code(getattr(expr, name))) + keyword > room}
    return expr.with_changes(**changes) if changes else expr


def _nested(expr: cst.BaseExpression, depth: int, step: str, room: int) -> cst.BaseExpression:
    """``expr`` split as far as it must for each line to fit in ``room`` columns past the
    statement's indentation: its last bracket one element a line, and each element that still
    does not fit split in turn (black's recursive right-hand split)."""
    def fits(node: cst.CSTNode, level: int, extra: int = 0) -> bool:
        return len(step) * level + len(_code(node)) + extra <= room

    bracket = _last_bracket(expr)
    if bracket is None:
        if isinstance(expr, (cst.IfExp, cst.BooleanOperation)) and not expr.lpar and not fits(expr, depth):
            return _parenthesized(_at_operators(expr, depth, step), depth, step)
        return expr
    if getattr(bracket, "lpar", ()):
        inner = bracket.with_changes(lpar=(), rpar=())
        if isinstance(inner, (cst.IfExp, cst.BooleanOperation)) and not fits(inner, depth + 1):
            inner = _at_operators(inner, depth, step)
        elif isinstance(inner, cst.Tuple) and inner.elements and not fits(inner, depth + 1):
            elements = [e.with_changes(value=_nested(e.value, depth + 1, step, room)) for e in inner.elements]
            elements = [e.with_changes(comma=cst.Comma(whitespace_after=_opened(depth, step))) for e in elements[:-1]] + [
                elements[-1].with_changes(comma=cst.Comma())]
            inner = inner.with_changes(elements=elements)
        elif not fits(inner, depth + 1):
            inner = _nested(inner, depth + 1, step, room)
        lpar, rpar = list(bracket.lpar), list(bracket.rpar)
        lpar[0] = lpar[0].with_changes(whitespace_after=_opened(depth, step))
        rpar[-1] = rpar[-1].with_changes(whitespace_before=_closing(depth, step))
        split: cst.BaseExpression = inner.with_changes(lpar=lpar, rpar=rpar)
    elif isinstance(bracket, cst.Call):
        args = [a.with_changes(value=_nested(a.value, depth + 1, step, room))
                if not fits(a.value, depth + 1, 1) else a for a in bracket.args]
        split = _split_call(bracket.with_changes(args=args), depth, step, one_per_line=len(args) > 1)
    else:
        split = _split_bracket(bracket, depth, step, one_per_line=True, room=room)
    return split if bracket is expr else expr.deep_replace(bracket, split)


def _lightest(expr: cst.BaseExpression, depth: int, step: str) -> cst.BaseExpression:
    """An argument's own split, one level down: its call's contents on their own line, or a
    conditional or boolean value broken at its operators."""
    bracket = _last_bracket(expr)
    if bracket is not None:
        split = _split_bracket(bracket, depth, step, one_per_line=False)
        return split if bracket is expr else expr.deep_replace(bracket, split)
    if isinstance(expr, (cst.IfExp, cst.BooleanOperation)) and not expr.lpar:
        return _at_operators(expr, depth - 1, step)
    return expr


def _at_operators(expr: cst.IfExp | cst.BooleanOperation, depth: int, step: str) -> cst.BaseExpression:
    """``expr`` with a line break before each ``if`` / ``else`` (each ``and`` / ``or`` of one
    chain), as black splits a bracket's contents at its operators."""
    if isinstance(expr, cst.IfExp):
        orelse = expr.orelse
        if isinstance(orelse, cst.IfExp) and not orelse.lpar:  # a chain: a if x else b if y else c
            orelse = _at_operators(orelse, depth, step)
        return expr.with_changes(whitespace_before_if=_opened(depth, step),
                                 whitespace_before_else=_opened(depth, step), orelse=orelse)
    left = expr.left
    if isinstance(left, cst.BooleanOperation) and type(left.operator) is type(expr.operator) and not left.lpar:
        left = _at_operators(left, depth, step)
    operator = expr.operator.with_changes(whitespace_before=_opened(depth, step))
    return expr.with_changes(left=left, operator=operator)


def _header_lines(module: cst.Module, stmt: cst.CSTNode, expr: cst.BaseExpression,
                  split: cst.BaseExpression | None = None) -> list[str]:
    """The lines of ``stmt``'s own line (its header, for a compound statement), with ``expr``
    replaced by ``split``."""
    bare = stmt.with_changes(leading_lines=())
    if isinstance(bare, cst.SimpleStatementLine):  # its trailing comment is the author's: no reason to split
        bare = bare.with_changes(trailing_whitespace=cst.TrailingWhitespace())
    if split is not None:
        bare = bare.deep_replace(expr, split)
    count = module.code_for_node(split or expr).count("\n") + 1
    return [line.rstrip("\r") for line in module.code_for_node(bare).split("\n")[:count]]


def wrap_long_lines(module: cst.Module, source: bytes, limit: int) -> cst.Module:
    """``module`` (a rewrite of ``source``) with the statements this run wrote that run past
    ``limit`` split as black would; ``module`` itself when every line fits."""
    from neuronize.analysis.positions import on_changed_lines

    step = module.default_indent
    long: list[tuple[cst.CSTNode, str, cst.BaseExpression]] = []
    for stmt, indent in _statements(module, "", step):
        expr = _header(stmt)
        if expr is None or "\n" in module.code_for_node(expr):
            continue  # nothing to split, or already over several lines: its author chose how
        (line,) = _header_lines(module, stmt, expr)
        if len(indent) + len(line) > limit:
            long.append((stmt, indent, expr))
    if not long:
        return module
    written = on_changed_lines(module, source, (stmt for stmt, _, _ in long))
    replacements: dict[int, cst.BaseExpression] = {}
    for stmt, indent, expr in long:
        if id(stmt) not in written:
            continue
        best, widest = None, len(indent) + max(map(len, _header_lines(module, stmt, expr)))
        for candidate in _candidates(expr, step, limit - len(indent) - len(step)):
            width = len(indent) + max(map(len, _header_lines(module, stmt, expr, candidate)))
            if width < widest:  # as black does, a split that does not fit is kept if it helps
                best, widest = candidate, width
            if width <= limit:
                break
        if best is not None:
            replacements[id(expr)] = best
    return replaced(module, replacements) if replacements else module  # type: ignore[arg-type]
