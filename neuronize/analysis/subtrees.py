"""Subtrees: what they hold, their code, a name free in them, and a module rebuilt with some of its
nodes replaced. Shared by the rules and the passes that shape written code (:mod:`neuronize.writing`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst

from neuronize.analysis.walk import walk


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


def paths_to(module: cst.Module, ids: Collection[int]) -> set[int] | None:
    """The ids of the syntax nodes on the way from ``module`` down to the nodes whose ids are
    ``ids`` (those nodes excluded, unless one holds another): a transformer that enters only
    these rebuilds only them (libcst rebuilds every node it enters, about 1.5 parses for a whole
    module). None when some of ``ids`` are not syntax nodes of ``module``: then enter every node."""
    wanted = set(ids)
    stack: list[int] = []
    path: set[int] = set()
    found = 0

    def enter(node: cst.CSTNode) -> None:
        nonlocal found
        if id(node) in wanted:
            found += 1
            path.update(stack)
        stack.append(id(node))

    def leave(node: cst.CSTNode) -> None:
        stack.pop()

    walk(module, enter, leave)
    return path if found == len(wanted) else None


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.CSTNode], on_path: set[int] | None) -> None:
        super().__init__()
        self.replacements = replacements
        self.on_path = on_path

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.on_path is None or id(node) in self.on_path

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        return self.replacements.get(id(original_node), updated_node)


def replaced(module: cst.Module, replacements: dict[int, cst.CSTNode]) -> cst.Module:
    """``module`` with each node whose ``id`` is a key of ``replacements`` replaced by its value."""
    result = module.visit(_Replace(replacements, paths_to(module, replacements)))
    assert isinstance(result, cst.Module)
    return result


def has_call(node: cst.CSTNode) -> bool:
    """Whether evaluating ``node`` may run code (a call, an await, a yield or a walrus)."""
    return bool(count_nodes(node, cst.Call, cst.Await, cst.Yield, cst.NamedExpr))


def has_comment(node: cst.CSTNode) -> bool:
    return bool(count_nodes(node, cst.Comment))
