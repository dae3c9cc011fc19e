"""Calls and literal containers: finding, adding and removing call arguments, list elements and
dict entries, in the layout the code already has (one argument per line stays one per line, a
comment stays on its line, a trailing comma stays trailing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.subtrees import count_nodes

#: calls whose arguments are text shown to people (``print``, ``logging`` and ``warnings``), not
#: values the code uses; each rule widens it where its own question needs (file writes, error logs)
MESSAGE_CALL_NAMES = frozenset({"print", "debug", "info", "warning", "warn", "log"})


# -- finding arguments ---------------------------------------------------------------------
def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def argument(call: cst.Call, name: str, position: int | None = None) -> cst.Arg | None:
    """The argument passed as ``name=`` or, failing that, at ``position`` (before any keyword)."""
    found = keyword(call, name)
    if found is not None or position is None:
        return found
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if position < len(positional) and all(not a.star for a in call.args[: position + 1]):
        return positional[position]
    return None



def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def double_star_arg(call: cst.Call) -> cst.Arg | None:
    """The ``**kwargs`` argument of ``call``, if any."""
    for arg in call.args:
        if arg.star == "**":
            return arg
    return None


def index_of(call: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, a in enumerate(call.args) if a is arg)



#: the calls that ask ``torch.cuda.is_available()`` under another name (Hugging Face's helpers
#: return exactly that: transformers/utils/import_utils.py)
CUDA_AVAILABLE = frozenset({
    "torch.cuda.is_available", "transformers.is_torch_cuda_available", "transformers.utils.is_torch_cuda_available",
    "transformers.utils.import_utils.is_torch_cuda_available",
})


def is_cuda_available_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``torch.cuda.is_available()`` in any spelling, Hugging Face's ``is_torch_cuda_available()`` too."""
    return isinstance(node, cst.Call) and not node.args and ctx.qualify(node.func) in CUDA_AVAILABLE


def partial_function(ctx: FileContext, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The function that ``functools.partial(function, ...)`` binds; None when ``node`` is not such a call."""
    if isinstance(node, cst.Call) and node.args and ctx.qualify(node.func) == "functools.partial":
        return node.args[0].value
    return None


# -- building arguments --------------------------------------------------------------------
def new_keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value``, written the PEP 8 way (no spaces around ``=``)."""
    return cst.Arg(keyword=cst.Name(name), value=value,
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional argument turned into ``name=value`` (its comma and whitespace kept)."""
    return arg.with_changes(keyword=cst.Name(name),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def with_function(call: cst.Call, func: cst.BaseExpression, qualified: str) -> cst.Call:
    """``call`` calling ``func`` (``qualified``) instead: a ``torch.accelerator`` function takes its
    one argument by position only (``synchronize(device=None, /)``), so a keyword given to the
    CUDA function (``torch.cuda.synchronize(device=d)``) is passed by position."""
    if qualified.startswith("torch.accelerator.") and len(call.args) == 1 and call.args[0].keyword is not None \
            and not call.args[0].star:
        return call.with_changes(func=func, args=[call.args[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)])
    return call.with_changes(func=func)


def replace_value(call: cst.Call, arg: cst.Arg, value: cst.BaseExpression) -> cst.Call:
    return call.with_changes(args=[a.with_changes(value=value) if a is arg else a for a in call.args])



# -- adding arguments ----------------------------------------------------------------------
def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``name=value`` set: replaced in place if present, else appended in the
    call's own layout.

    In a multi-line call the new argument gets a line of its own at the arguments' indentation,
    the closing parenthesis keeps its place, and a comment ending the previous last line stays
    on that line.
    """
    existing = keyword(call, name)
    if existing is not None:
        return call.with_changes(args=[a.with_changes(value=value) if a is existing else a for a in call.args])
    new_arg = new_keyword(name, value)
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    indent = _argument_indent(call)
    comma = last.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace) \
            and indent is not None:
        # `    last,  # note\n)` -> `    last,  # note\n    name=value,\n)`
        closing = comma.whitespace_after
        args[-1] = last.with_changes(comma=comma.with_changes(
            whitespace_after=closing.with_changes(last_line=cst.SimpleWhitespace(indent))))
        new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), empty_lines=[], indent=closing.indent,
            last_line=closing.last_line)))
    elif isinstance(comma, cst.Comma):
        # a one-line call with a trailing comma: `f(a,)` -> `f(a, name=value,)`
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new_arg = new_arg.with_changes(comma=comma)
    elif isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace) and indent is not None:
        # `    last  # note\n)` -> `    last,  # note\n    name=value\n)`
        closing = last.whitespace_after_arg
        args[-1] = last.with_changes(
            whitespace_after_arg=cst.SimpleWhitespace(""),
            comma=cst.Comma(whitespace_after=closing.with_changes(last_line=cst.SimpleWhitespace(indent))))
        new_arg = new_arg.with_changes(whitespace_after_arg=cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), empty_lines=[], indent=closing.indent,
            last_line=closing.last_line))
    else:
        # `f(a\n)`: the whitespace before the closing parenthesis moves after the new argument
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    args.append(new_arg)
    return call.with_changes(args=args)


def _argument_indent(call: cst.Call) -> str | None:
    """The indentation of the arguments of a multi-line call, if they sit on lines of their own."""
    for arg in reversed(call.args[:-1]):
        ws = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None
        if isinstance(ws, cst.ParenthesizedWhitespace):
            return ws.last_line.value
    ws = call.whitespace_before_args
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.last_line.value
    return None



def _no_comment(ws: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indentation, without the comment (so a comment is never copied)."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(newline=ws.first_line.newline),
                               empty_lines=[])
    return ws


def _separator(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace that leads from one argument to the next in this call's layout."""
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return _no_comment(call.whitespace_before_args)
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return _no_comment(arg.comma.whitespace_after)
    return cst.SimpleWhitespace(" ")


def _indent_like(ws: cst.BaseParenthesizableWhitespace,
                 sep: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """``ws`` (which may carry a comment) continued to the indentation of ``sep``."""
    if isinstance(ws, cst.ParenthesizedWhitespace) and isinstance(sep, cst.ParenthesizedWhitespace):
        return ws.with_changes(indent=sep.indent, last_line=sep.last_line)
    return sep


def insert_args(call: cst.Call, index: int, new: Sequence[cst.Arg]) -> cst.Call:
    """``call`` with ``new`` arguments inserted before position ``index`` (``len(args)``: appended)."""
    args = list(call.args)
    sep = _separator(call)
    if not new:
        return call
    if not args:
        fresh = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in new]
        fresh[-1] = fresh[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return call.with_changes(args=fresh)
    fresh = [a.with_changes(comma=cst.Comma(whitespace_after=sep)) for a in new]
    if index < len(args):
        return call.with_changes(args=[*args[:index], *fresh, *args[index:]])
    # Appending after the last argument: it keeps its comment, the new last argument takes over
    # the line break (or trailing comma) that led to the closing parenthesis.
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        closing = last.comma
        last = last.with_changes(comma=closing.with_changes(
            whitespace_after=_indent_like(closing.whitespace_after, sep)))
        fresh[-1] = fresh[-1].with_changes(
            comma=closing.with_changes(whitespace_after=_no_comment(closing.whitespace_after)))
    else:
        tail = last.whitespace_after_arg
        last = last.with_changes(comma=cst.Comma(whitespace_after=_indent_like(tail, sep)),
                                 whitespace_after_arg=cst.SimpleWhitespace(""))
        fresh[-1] = fresh[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_no_comment(tail))
    return call.with_changes(args=[*args[:-1], last, *fresh])



# -- removing arguments / dict entries -----------------------------------------------------
def count_comments(node: cst.CSTNode | None) -> int:
    return 0 if not isinstance(node, cst.CSTNode) else count_nodes(node, cst.Comment)


def drop_elements(elements: Sequence, remove: Sequence, closing: object = None) -> tuple[list, int, object]:
    """``elements`` (call arguments or dict entries) without ``remove``; also returns how many
    comments went, and ``closing`` (the whitespace before a dict's ``}``) as it must now be.

    When the last element goes, the new last one keeps the comment ending its own line and takes
    over the layout before the closing bracket.
    """
    keep = [e for e in elements if not any(e is r for r in remove)]
    dropped = sum(count_comments(r) for r in remove)
    if keep and elements and keep[-1] is not elements[-1]:
        old_last, new_last = elements[-1], keep[-1]
        own, tail = new_last.comma, old_last.comma
        own_ws = own.whitespace_after if isinstance(own, cst.Comma) else None
        changes: dict[str, object] = {}
        if isinstance(tail, cst.Comma) and isinstance(tail.whitespace_after, cst.ParenthesizedWhitespace) \
                and isinstance(own_ws, cst.ParenthesizedWhitespace):
            # call arguments: `a,  # note\n    b,\n)` -> `a,  # note\n)`
            changes["comma"] = own.with_changes(
                whitespace_after=own_ws.with_changes(last_line=tail.whitespace_after.last_line))
        elif isinstance(own_ws, cst.ParenthesizedWhitespace) and isinstance(closing, cst.ParenthesizedWhitespace):
            # dict entries: the line break before `}` belongs to the `}`
            changes["comma"] = tail if isinstance(tail, cst.Comma) else cst.MaybeSentinel.DEFAULT
            dropped += count_comments(closing.first_line) - count_comments(tail)
            closing = closing.with_changes(first_line=own_ws.first_line,
                                           empty_lines=[*own_ws.empty_lines, *closing.empty_lines])
        elif isinstance(tail, cst.Comma):
            changes["comma"] = tail
            dropped += count_comments(own) - count_comments(tail)
        else:
            changes["comma"] = cst.MaybeSentinel.DEFAULT
            dropped += count_comments(own)
            if isinstance(old_last, cst.Arg):
                changes["whitespace_after_arg"] = old_last.whitespace_after_arg
                dropped -= count_comments(old_last.whitespace_after_arg)
        keep[-1] = new_last.with_changes(**changes)
    return keep, dropped, closing



def without_args(call: cst.Call, *remove: cst.Arg) -> cst.Call:
    """``call`` without the given arguments, commas, comments and a trailing comma handled."""
    args, _, _ = drop_elements(call.args, remove)
    return call.with_changes(args=args)


# -- adding list elements / dict entries ---------------------------------------------------
_E = TypeVar("_E", cst.Element, cst.DictElement)


def insert_after(elements: Sequence[_E], index: int, new: _E) -> list[_E]:
    """``elements`` with ``new`` (an Element/DictElement) inserted after ``elements[index]``.

    The new element reuses the separator of its neighbours, so one-line and one-per-line
    literals keep their layout.
    """
    items = list(elements)
    anchor = items[index]
    separator = None
    for item in items[:-1]:
        if isinstance(item.comma, cst.Comma):
            separator = item.comma
            break
    if separator is None:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if index < len(items) - 1:
        new = new.with_changes(comma=anchor.comma)
    else:
        new = new.with_changes(comma=anchor.comma)
        items[index] = anchor.with_changes(comma=separator)
    items.insert(index + 1, new)
    return items

