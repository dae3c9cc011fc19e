"""Syntax trees: subtrees (what they hold), statements (where they sit, what follows them),
conditions (their atoms) and ``with`` blocks (unwrapping one)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transforms._helpers.messages import short


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



def code(node: cst.CSTNode) -> str:
    """``node``'s code as written (its own parentheses and whitespace included)."""
    return cst.Module([]).code_for_node(node)


def free_name(preferred: Sequence[str], taken: set[str]) -> str:
    """The first of ``preferred`` not in ``taken``, else the last with ``_2``, ``_3``..."""
    for name in preferred:
        if name not in taken:
            return name
    n = 2
    while f"{preferred[-1]}_{n}" in taken:
        n += 1
    return f"{preferred[-1]}_{n}"


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        return self.replacements.get(id(original_node), updated_node)


def replaced(module: cst.Module, replacements: dict[int, cst.CSTNode]) -> cst.Module:
    """``module`` with each node whose ``id`` is a key of ``replacements`` replaced by its value."""
    result = module.visit(_Replace(replacements))
    assert isinstance(result, cst.Module)
    return result


def has_call(node: cst.CSTNode) -> bool:
    """Whether evaluating ``node`` may run code (a call, an await, a yield or a walrus)."""
    return bool(count_nodes(node, cst.Call, cst.Await, cst.Yield, cst.NamedExpr))


def has_comment(node: cst.CSTNode) -> bool:
    return bool(count_nodes(node, cst.Comment))



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
