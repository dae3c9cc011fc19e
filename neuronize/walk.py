"""A read-only walk of a libcst tree that visits syntax nodes only, in source order.

libcst's own ``module.visit(visitor)`` rebuilds every node it passes (its traversal is shared with
transformers) and visits every whitespace, comma and parenthesis node: about one parse's worth of
work per walk. Rules look at syntax, so this walk reads each node's child fields directly, skips
whitespace and punctuation, and costs a fraction of that (measured in benchmarks/).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

#: field names that never hold a node a rule looks at
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "equal", "colon", "dot", "leading_lines",
    "lines_after_decorators", "header", "footer", "trailing_whitespace", "newline",
    "asynchronous", "operator", "star", "indent", "default_indent", "default_newline",
    "encoding", "has_trailing_newline", "lbracket", "rbracket", "lbrace", "rbrace",
    "whitespace", "first_line", "empty_lines", "arrow",
})
#: where libcst's field order differs from the order in the source
_SOURCE_ORDER = {
    "FunctionDef": ("decorators", "name", "type_parameters", "params", "returns", "body"),
    "ClassDef": ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    "IfExp": ("body", "test", "orelse"),
    "Arg": ("keyword", "value"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        names = [f.name for f in dataclasses.fields(kind)]
        order = _SOURCE_ORDER.get(kind.__name__)
        if order is not None:
            names = [n for n in order if n in names] + [n for n in names if n not in order]
        fields = _FIELDS[kind] = tuple(
            n for n in names if n not in _SKIPPED_FIELDS and not n.startswith("whitespace")
        )
    return fields


#: type -> whether its instances are syntax nodes to visit. libcst's base classes are ABCs,
#: whose isinstance checks are slow; the answer per concrete type never changes.
_SYNTAX: dict[type, bool] = {}


def _is_syntax(kind: type) -> bool:
    answer = _SYNTAX.get(kind)
    if answer is None:
        answer = _SYNTAX[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, _PUNCTUATION)
    return answer


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The syntax children of ``node``, in source order."""
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                if _is_syntax(type(item)):
                    yield item
        elif _is_syntax(kind):
            yield value


_PUNCTUATION = (
    cst.BaseParenthesizableWhitespace, cst.Newline, cst.EmptyLine, cst.TrailingWhitespace,
    cst.Comma, cst.LeftParen, cst.RightParen, cst.Semicolon, cst.Colon, cst.Dot,
    cst.AssignEqual, cst.Comment, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseUnaryOp,
    cst.BaseAugOp, cst.BaseCompOp, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.ImportStar, cst.Asynchronous,
)


def walk(node: cst.CSTNode, enter: Callable[[cst.CSTNode], None],
         leave: Callable[[cst.CSTNode], None]) -> None:
    """Call ``enter`` on each syntax node before its children and ``leave`` after them."""
    enter(node)
    for child in children(node):
        walk(child, enter, leave)
    leave(node)


def iter_syntax(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its syntax descendants, depth first, in source order (stop whenever)."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(reversed(list(children(current))))
