"""A read-only walk of a libcst tree that visits syntax nodes only, in source order.

libcst's own ``module.visit(visitor)`` rebuilds every node it passes (its traversal is shared with
transformers) and visits every whitespace, comma and parenthesis node: about one parse's worth of
work per walk. Rules look at syntax, so this walk reads each node's child fields directly, skips
whitespace and punctuation, and costs a fraction of that (measured in benchmarks/). Rules and their
helpers that ask a question of a subtree run their visitors through :func:`visit`, never through
``node.visit``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

#: id(node) -> parent node, for the nodes a walk passed
Parents = dict[int, cst.CSTNode]
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
    "ExceptHandler": ("type", "name", "body"),
    "ExceptStarHandler": ("type", "name", "body"),
    "MatchCase": ("pattern", "guard", "body"),
    "Parameters": ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
    "TypeAlias": ("name", "type_parameters", "value"),
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


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of ``node``, in source order (a list: a generator per node cost a
    quarter of the walk; the tables are read inline: this runs for every node of every walk)."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _child_fields(type(node))
    out: list[cst.CSTNode] = []
    syntax = _SYNTAX
    for name in fields:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                answer = syntax.get(type(item))
                if answer is None:
                    answer = _is_syntax(type(item))
                if answer:
                    out.append(item)
        else:
            answer = syntax.get(kind)
            if answer is None:
                answer = _is_syntax(kind)
            if answer:
                out.append(value)
    return out


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


def ancestors(node: cst.CSTNode, parents: Parents) -> Iterator[cst.CSTNode]:
    """The nodes above ``node`` in a walk's parent map, innermost first."""
    while (parent := parents.get(id(node))) is not None:
        yield parent
        node = parent


def iter_syntax(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its syntax descendants, depth first, in source order (stop whenever)."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(reversed(children(current)))


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Run ``visitor`` over ``node`` and its syntax descendants as ``node.visit(visitor)`` would
    (``on_visit`` / ``visit_<Type>`` decide whether to enter a node's children, ``on_leave`` /
    ``leave_<Type>`` follow them), without rebuilding a node or passing whitespace and punctuation:
    for visitors that look at syntax only (no ``visit_Comma``, no ``visit_Comment``)."""
    on_visit, on_leave = _hooks(visitor)

    def go(current: cst.CSTNode, /) -> None:
        if on_visit(current):
            for child in children(current):
                go(child)
        on_leave(current)

    try:
        go(node)
    finally:
        go = released  # a closure that refers to itself: a cycle holding the visitor and the subtree


def released(node: cst.CSTNode, /) -> None:
    """What a walk's recursive closure is bound to once the walk is over. The closure refers to
    itself (its cell holds it): a reference cycle, which kept everything the closure holds (the
    rules, the parent map, the whole tree) alive until the cycle collector found it; rebinding the
    cell breaks the cycle, so the tree is freed as soon as its file is done."""


def _hooks(visitor: cst.CSTVisitor) -> tuple[Callable[[cst.CSTNode], bool], Callable[[cst.CSTNode], None]]:
    """``visitor``'s ``on_visit`` and ``on_leave``; libcst's own look a method up by name at every
    node, these once per node type."""
    kind = type(visitor)
    methods: dict[type, tuple[Callable[[cst.CSTNode], object] | None, ...]] = {}

    def lookup(node_kind: type) -> tuple[Callable[[cst.CSTNode], object] | None, ...]:
        name = node_kind.__name__
        found = methods[node_kind] = (getattr(visitor, f"visit_{name}", None), getattr(visitor, f"leave_{name}", None))
        return found

    def on_visit(node: cst.CSTNode) -> bool:
        method = (methods.get(type(node)) or lookup(type(node)))[0]
        return method is None or method(node) is not False

    def on_leave(node: cst.CSTNode) -> None:
        method = (methods.get(type(node)) or lookup(type(node)))[1]
        if method is not None:
            method(node)

    default_visit = kind.on_visit is cst.CSTVisitor.on_visit
    default_leave = kind.on_leave is cst.CSTVisitor.on_leave
    return (on_visit if default_visit else visitor.on_visit,
            on_leave if default_leave else visitor.on_leave)
