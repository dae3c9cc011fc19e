"""Syntax trees: statements (where they sit, what follows them), conditions (their atoms) and
``with`` blocks (unwrapping one). What a subtree holds: :mod:`neuronize.analysis.subtrees`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.subtrees import has_comment
from neuronize.analysis.walk import walk
from neuronize.transforms._helpers.messages import short


# -- statements ----------------------------------------------------------------------------
def is_expression_statement(ctx: FileContext) -> bool:
    """The node being visited is the whole expression of an expression statement."""
    parent = ctx.parent
    if not isinstance(parent, cst.Expr):
        return False
    stack = ctx.stack
    return len(stack) >= 3 and isinstance(stack[-3], (cst.SimpleStatementLine, cst.SimpleStatementSuite))



def assign_targets(node: cst.Assign | cst.AnnAssign | cst.AugAssign) -> list[cst.BaseExpression]:
    """What an assignment statement assigns to."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target]


def target_names(target: cst.BaseExpression) -> list[str]:
    """The dotted names an assignment target binds, tuples and lists unpacked (``a, self.b = ...``:
    ``["a", "self.b"]``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    name = dotted_name(target)
    return [name] if name else []


def assigned_names(node: cst.CSTNode) -> list[str]:
    """The dotted names an assignment (``=`` or annotated) sets: ``["x", "self.flag"]``."""
    if not isinstance(node, (cst.Assign, cst.AnnAssign)):
        return []
    names = [dotted_name(t) for t in assign_targets(node)]
    return [n for n in names if n]


def following_statements(ctx: FileContext, stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after ``stmt`` (an ancestor of the node being visited) in its block."""
    for anc in ctx.ancestors():
        body = getattr(anc, "body", None)
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and isinstance(body, (list, tuple)):
            for i, child in enumerate(body):
                if child is stmt:
                    return list(body[i + 1:])
    return []


# -- conditions ----------------------------------------------------------------------------
def small_statements(block: cst.BaseSuite) -> list[cst.BaseSmallStatement]:
    """The small statements of ``block``; empty when it holds a compound statement."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if not all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines):
        return []
    return [s for line in lines for s in line.body]  # type: ignore[misc, union-attr]


def iter_conditions(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The atoms of a condition: through ``and`` / ``or`` / ``not``."""
    if isinstance(test, cst.BooleanOperation):
        yield from iter_conditions(test.left)
        yield from iter_conditions(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from iter_conditions(test.expression)
    else:
        yield test



# -- with blocks ---------------------------------------------------------------------------
def unwrap_with(node: cst.With, drop: Sequence[cst.WithItem]) -> cst.CSTNode | cst.FlattenSentinel | str:
    """``node`` without the items in ``drop``; its body alone when no item is left.

    Returns a reason (a string) when this cannot be done without losing something.
    """
    if node.asynchronous is not None:
        return "an `async with` block"
    for item in drop:
        if item.asname is not None:
            return f"the context value is bound (`as {short(item.asname.name, None)}`)"
        if has_comment(item):
            return "comments inside the `with` header"
    keep = [item for item in node.items if not any(item is d for d in drop)]
    if keep:
        last = node.items[-1]
        comma = last.comma if len(keep) > 1 else cst.MaybeSentinel.DEFAULT  # `with (a,):` is a tuple
        keep[-1] = keep[-1].with_changes(comma=comma)
        if len(keep) == 1 and isinstance(node.lpar, cst.LeftParen) and isinstance(node.rpar, cst.RightParen) \
                and not has_comment(node.lpar) and not has_comment(node.rpar):
            # `with (\n    a,\n    b,\n):` -> `with a:`
            return node.with_changes(items=keep, lpar=cst.MaybeSentinel.DEFAULT, rpar=cst.MaybeSentinel.DEFAULT,
                                     whitespace_after_with=cst.SimpleWhitespace(" "))
        return node.with_changes(items=keep)
    body = node.body
    header_comments: list[cst.EmptyLine] = []
    if any(has_comment(p) for p in (node.lpar, node.rpar) if isinstance(p, cst.CSTNode)):
        return "comments inside the `with` header"
    if isinstance(body, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(
            body=body.body, leading_lines=node.leading_lines, trailing_whitespace=body.trailing_whitespace
        )
        return cst.FlattenSentinel([line])
    assert isinstance(body, cst.IndentedBlock)
    if any(line.comment is not None for line in body.footer):
        return "comments after the last statement of the block"
    if body.header.comment is not None:
        header_comments.append(cst.EmptyLine(indent=True, comment=body.header.comment))
    statements = list(body.body)
    first = statements[0]
    statements[0] = first.with_changes(
        leading_lines=[*node.leading_lines, *header_comments, *first.leading_lines]  # type: ignore[attr-defined]
    )
    return cst.FlattenSentinel(statements)


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` in parentheses unless it is a single operand already."""
    if isinstance(expr, (cst.BooleanOperation, cst.IfExp, cst.Comparison)) and not expr.lpar:
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


def in_place(value: cst.BaseExpression, original: cst.BaseExpression, parent: cst.CSTNode | None
             ) -> cst.BaseExpression:
    """``value`` (say a conditional expression) where ``original`` stood under ``parent``: in
    ``original``'s own parentheses, else in parentheses unless its place takes it as it is (an
    assignment's or a return's value, a dict value, an argument)."""
    if original.lpar:
        return value.with_changes(lpar=original.lpar, rpar=original.rpar)
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Return, cst.DictElement)) \
            or isinstance(parent, cst.Arg) and not parent.star:
        return value
    return parenthesized(value)


def enclosing_body(ancestors: list[cst.CSTNode]) -> tuple[list[cst.CSTNode] | None, cst.CSTNode | None]:
    """The statements of the function (or module) a node sits in, given its ``ancestors``
    (innermost first), and the one of them that holds it; ``(None, None)`` in a class body, a
    lambda or a one-line function."""
    seen: list[cst.CSTNode] = []
    for anc in ancestors:
        body: list[cst.CSTNode] | None = None
        if isinstance(anc, cst.FunctionDef):
            if not isinstance(anc.body, cst.IndentedBlock):
                return None, None
            body = list(anc.body.body)
        elif isinstance(anc, cst.Module):
            body = list(anc.body)
        elif isinstance(anc, (cst.ClassDef, cst.Lambda)):
            return None, None
        if body is not None:
            ids = {id(s) for s in body}
            return body, next((s for s in seen if id(s) in ids), None)
        seen.append(anc)
    return None, None


def is_read(node: cst.Name | cst.Attribute, parent: cst.CSTNode | None) -> bool:
    """``node`` (under ``parent``) reads the variable it names: not the target of an assignment, a
    parameter, an attribute's name or a keyword's."""
    return not isinstance(parent, (cst.AssignTarget, cst.Param)) and not (
        isinstance(parent, cst.Attribute) and parent.attr is node) and not (
        isinstance(parent, cst.Arg) and parent.keyword is node)


def read_paths(scope: cst.CSTNode, name: str, skipped: cst.CSTNode | None = None) -> list[list[cst.CSTNode]]:
    """The path (ancestors under ``scope``, outermost first, the read last) to each read of the
    variable ``name`` in ``scope``, outside ``skipped`` (its assignment)."""
    return [path for path in name_paths(scope, name, skipped)
            if isinstance(read := path[-1], cst.Name) and is_read(read, path[-2] if len(path) > 1 else None)]


def name_paths(scope: cst.CSTNode, name: str, skipped: cst.CSTNode | None = None) -> list[list[cst.CSTNode]]:
    """The path (ancestors under ``scope``, outermost first, the name last) to each ``Name`` node
    spelling ``name`` in ``scope``, outside ``skipped``: reads, bindings, attribute and keyword
    names alike."""
    stack: list[cst.CSTNode] = []
    found: list[list[cst.CSTNode]] = []

    def enter(node: cst.CSTNode) -> None:
        stack.append(node)
        if isinstance(node, cst.Name) and node.value == name and not any(n is skipped for n in stack):
            found.append(list(stack))

    def leave(node: cst.CSTNode) -> None:
        stack.pop()

    walk(scope, enter, leave)
    return found
