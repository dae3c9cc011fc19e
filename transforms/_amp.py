"""Helpers shared by the mixed-precision rules (NRN201-NRN205).

- the qualified names of the CUDA and the device-generic AMP APIs;
- argument-list edits that keep a call's layout (one argument per line stays one per line, a
  comment stays on the line it was written on, a trailing comma stays trailing);
- the import removals that go with replacing ``torch.cuda.amp.X`` by ``torch.X`` / ``torch.amp.X``
  (the engine drops an import only when no use of the name is left);
- where a bare reference (not a call) to a CUDA AMP name sits in a position worth reporting.
"""

from __future__ import annotations

import functools
from typing import ClassVar, Iterable, Sequence

import libcst as cst

from neuronize.context import FileContext, dotted_name
from neuronize.transform import ImportRequest, Transform

# -- names ---------------------------------------------------------------------------------
#: ``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``
AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
#: ``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``
CUDA_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
CUDA_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")

#: ``torch.amp.GradScaler(device="cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)``
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler"})
#: ``torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)``
CUDA_GRAD_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})

#: ``torch.cuda.amp.custom_fwd(fwd=None, *, cast_inputs=None)`` -> its device-generic twin
CUDA_CUSTOM = {
    "torch.cuda.amp.custom_fwd": "torch.amp.custom_fwd",
    "torch.cuda.amp.custom_bwd": "torch.amp.custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_fwd": "torch.amp.custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "torch.amp.custom_bwd",
}
#: ``torch.amp.custom_fwd(fwd=None, *, device_type, cast_inputs=None)``
CUSTOM = frozenset({
    "torch.amp.custom_fwd", "torch.amp.custom_bwd",
    "torch.amp.autocast_mode.custom_fwd", "torch.amp.autocast_mode.custom_bwd",
})

FLOAT16 = frozenset({"torch.float16", "torch.half"})


def last_name(node: cst.CSTNode) -> str | None:
    """``autocast`` for ``torch.cuda.amp.autocast`` / ``autocast``; None for anything else."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def local_aliases(ctx: FileContext, qualified: Iterable[str]) -> frozenset[str]:
    """Local names bound by import to any of ``qualified`` (``amp_autocast`` after ``... as amp_autocast``)."""
    return frozenset(local for q in qualified for local in ctx.names.local_names_for(q))


def mentions(ctx: FileContext, expr: cst.CSTNode, qualified: frozenset[str]) -> bool:
    """``expr`` names one of ``qualified`` somewhere (``T.bfloat16 if x else T.float16``)."""
    if isinstance(expr, (cst.Attribute, cst.Name)) and ctx.qualify(expr) in qualified:
        return True
    return any(mentions(ctx, child, qualified) for child in expr.children)


def in_fallback_branch(ctx: FileContext, generic: frozenset[str]) -> bool:
    """The node being visited sits in an ``except`` branch whose ``try`` uses one of ``generic``.

    ``try: s = torch.amp.GradScaler(device) / except AttributeError: s = torch.cuda.amp.GradScaler()``
    keeps old PyTorch working; the CUDA call there is the fallback, the ``try`` branch is what runs.
    """
    ancestors = list(ctx.ancestors())
    for i, anc in enumerate(ancestors):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.ExceptHandler) and i + 1 < len(ancestors):
            owner = ancestors[i + 1]
            if isinstance(owner, (cst.Try, cst.TryStar)) and mentions(ctx, owner.body, generic):
                return True
    return False


# -- literals ------------------------------------------------------------------------------
def is_false(arg: cst.Arg | None) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"


def is_string(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


# -- argument lists ------------------------------------------------------------------------
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


def new_keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(keyword=cst.Name(name), value=value,
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional argument turned into ``name=value`` (its comma and whitespace kept)."""
    return arg.with_changes(keyword=cst.Name(name),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def replace_value(call: cst.Call, arg: cst.Arg, value: cst.BaseExpression) -> cst.Call:
    return call.with_changes(args=[a.with_changes(value=value) if a is arg else a for a in call.args])


def index_of(call: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, a in enumerate(call.args) if a is arg)


# -- imports -------------------------------------------------------------------------------
def cuda_import_removals(ctx: FileContext, func: cst.CSTNode) -> tuple[ImportRequest, ...]:
    """Imports that may become unused once ``func`` (a ``torch.cuda...`` name) is spelled ``torch.X``.

    ``autocast`` from ``from torch.cuda.amp import autocast``, ``amp`` from ``from torch.cuda import
    amp`` or ``import torch.cuda.amp as amp``. The engine removes them only if nothing uses them.
    """
    name = dotted_name(func)
    if name is None:
        return ()
    head = name.split(".")[0]
    full = ctx.qualify(cst.Name(head))
    if full is None or not full.startswith("torch.cuda"):
        return ()
    module, _, obj = full.rpartition(".")
    requests = [ImportRequest(module, obj, asname=None if head == obj else head, remove=True)]
    if full in ("torch.cuda", "torch.cuda.amp"):
        # ``import torch.cuda.amp as amp`` binds the same name as ``from torch.cuda import amp``.
        requests.append(ImportRequest(full, asname=head, remove=True))
    return tuple(requests)


# -- references ----------------------------------------------------------------------------
def is_reference(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` (the Name/Attribute being visited) is used as a value, not called or imported.

    Only positions where a value is clearly passed on are counted: an argument, a branch of a
    conditional expression, the value of an assignment, a return value, a container element.
    """
    parent = ctx.parent
    if isinstance(parent, cst.Arg):
        return parent.value is node
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
        return parent.value is node
    if isinstance(parent, cst.IfExp):
        return parent.body is node or parent.orelse is node
    if isinstance(parent, (cst.Element, cst.DictElement)):
        return parent.value is node
    if isinstance(parent, cst.BooleanOperation):
        return True
    if isinstance(parent, cst.Lambda):
        return parent.body is node
    return False


class AmpRule(Transform):
    """Base of the mixed-precision rules: the file's local spellings of the family's callables,
    worked out once per file, so most nodes are turned away by a set lookup."""

    abstract = True
    #: every qualified name the rule handles, the CUDA-only ones among them, and bare names
    #: (``autocast`` after a star import) it looks at too
    QUALIFIED: ClassVar[frozenset[str]] = frozenset()
    CUDA_QUALIFIED: ClassVar[frozenset[str]] = frozenset()
    BARE: ClassVar[frozenset[str]] = frozenset()

    @functools.cached_property
    def callable_names(self) -> frozenset[str]:
        return local_aliases(self.ctx, self.QUALIFIED | self.CUDA_QUALIFIED) | self.BARE

    @functools.cached_property
    def cuda_locals(self) -> frozenset[str]:
        return local_aliases(self.ctx, self.CUDA_QUALIFIED)
