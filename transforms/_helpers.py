"""Matchers and builders shared by the rules. A helper lives here once two rules need it."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.context import FileContext
from neuronize.transform import ImportRequest

CUDA_DEVICE = re.compile(r"^cuda(:\d+)?$")


# -- strings -------------------------------------------------------------------------------
def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        prefix = node.prefix.lower()
        if "b" in prefix or "f" in prefix:
            return None
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        return None if left is None or right is None else left + right
    return None


def is_cuda_device_string(node: cst.CSTNode) -> bool:
    """``"cuda"``, ``"cuda:0"``, or an f-string ``f"cuda:{rank}"``."""
    value = string_value(node)
    if value is not None:
        return bool(CUDA_DEVICE.match(value))
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        return (
            len(parts) == 2
            and isinstance(parts[0], cst.FormattedStringText)
            and parts[0].value == "cuda:"
            and isinstance(parts[1], cst.FormattedStringExpression)
        )
    return False


class _CudaStringFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_SimpleString(self, node: cst.SimpleString) -> bool:
        self.found = self.found or is_cuda_device_string(node)
        return False

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        self.found = self.found or is_cuda_device_string(node)
        return False


def branches_mention_cuda(node: cst.IfExp) -> bool:
    """A CUDA device string anywhere in either branch of ``... if ... else ...``.

    Such a conditional chooses a device: the device-placement rules (NRN101) rewrite it as one
    unit, and the runtime rules (NRN110) leave its ``torch.cuda.is_available()`` test alone.
    """
    finder = _CudaStringFinder()
    node.body.visit(finder)
    node.orelse.visit(finder)
    return finder.found


def make_string(value: str, like: cst.CSTNode | None = None) -> cst.SimpleString:
    """A string literal for ``value`` in the quote style of ``like`` (double quotes by default)."""
    quote = '"'
    if isinstance(like, cst.SimpleString):
        quote = like.quote if like.quote in ("'", '"') else '"'
    if quote in value:
        quote = '"' if quote == "'" else "'"
    return cst.SimpleString(f"{quote}{value}{quote}")


def replace_device_string(node: cst.CSTNode, device: str) -> cst.CSTNode:
    """``"cuda:1"`` / ``f"cuda:{i}"`` -> ``"neuron"`` (index dropped), keeping parentheses."""
    new = make_string(device, node if isinstance(node, cst.SimpleString) else None)
    lpar = getattr(node, "lpar", ())
    rpar = getattr(node, "rpar", ())
    return new.with_changes(lpar=lpar, rpar=rpar)


# -- calls and arguments -------------------------------------------------------------------
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


def without_args(call: cst.Call, *remove: cst.Arg) -> cst.Call:
    """``call`` without the given arguments, commas and a trailing comma handled."""
    keep = [a for a in call.args if not any(a is r for r in remove)]
    if keep and len(keep) < len(call.args):
        last_original = call.args[-1]
        # The new last argument takes the original last argument's comma (usually none).
        keep[-1] = keep[-1].with_changes(comma=last_original.comma)
    return call.with_changes(args=keep)


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
    new_arg = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
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


# -- names ---------------------------------------------------------------------------------
def qualified_expr(ctx: FileContext, qualified: str) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]]:
    """An expression naming ``qualified`` (e.g. ``torch.neuron.synchronize``) in this file.

    Uses the file's own spelling of the top package (``T.neuron.synchronize`` after
    ``import torch as T``) and asks for ``import <package>`` only when the file has none.
    """
    package, _, rest = qualified.partition(".")
    local = ctx.names.local_names_for(package)
    head = local[0] if local else package
    imports: tuple[ImportRequest, ...] = () if local else (ImportRequest(package),)
    expr = cst.parse_expression(f"{head}.{rest}" if rest else head)
    return expr, imports


# -- subtrees ------------------------------------------------------------------------------
class _Counter(cst.CSTVisitor):
    def __init__(self, kinds: tuple[type, ...]) -> None:
        super().__init__()
        self.kinds = kinds
        self.count = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kinds):
            self.count += 1
        return True


def count_nodes(node: cst.CSTNode, *kinds: type) -> int:
    """How many nodes of ``kinds`` the subtree holds (whitespace and comments included).

    A plain visitor, not ``libcst.matchers``: importing that costs ~0.13 s at every start-up.
    """
    counter = _Counter(kinds)
    node.visit(counter)
    return counter.count
