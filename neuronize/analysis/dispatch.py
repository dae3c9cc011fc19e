"""Every enabled rule on the one walk of a tree: each node goes to every rule's ``visit_<Type>`` /
``leave_<Type>``; the findings of a catch-all rule on code another rule reported are then dropped
(:mod:`neuronize.decision.claims`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, collect_imports
from neuronize.analysis.walk import Parents, children, released
from neuronize.decision.claims import drop_claimed
from neuronize.transform import Report, Reporter, Transform
from neuronize.types import Options


_HOOKS: dict[type[Transform], tuple[tuple[str, int, str], ...]] = {}


def _hooks(rule: type[Transform]) -> tuple[tuple[str, int, str], ...]:
    """``(node type name, 0 for visit / 1 for leave, method name)`` of each hook ``rule`` defines
    (read once per class: ``dir`` on every rule of every file cost more than the walk's dispatch)."""
    if rule not in _HOOKS:
        _HOOKS[rule] = tuple((attr[6:], int(attr.startswith("leave_")), attr) for attr in dir(rule)
                             if attr.startswith(("visit_", "leave_")))
    return _HOOKS[rule]


class _Dispatch:
    """Sends each node to every rule's ``visit_<Type>`` / ``leave_<Type>`` (Fixit-style batching),
    on its own walk (:func:`neuronize.analysis.walk.children`): the context's stack and parent map
    kept inline cost a third less than two callbacks per node."""

    def __init__(self, rules: Sequence[Transform], ctx: FileContext) -> None:
        self._stack = ctx.stack
        #: id(node) -> its parent, for every node the walk passes (lets the applying pass skip the rest)
        self.parents: Parents = ctx.parents
        self._hooks: dict[type, tuple[list[Callable[[cst.CSTNode], object]], ...]] = {}
        self._methods: dict[str, tuple[list[Callable[[cst.CSTNode], object]], ...]] = defaultdict(lambda: ([], []))
        for rule in rules:
            for node_type, is_leave, attr in _hooks(type(rule)):
                self._methods[node_type][is_leave].append(getattr(rule, attr))

    def walk(self, root: cst.CSTNode) -> None:
        """Every rule's hooks on ``root`` and each node under it, parents before children (a
        closure over locals: the attribute lookups of a method cost a tenth of the walk)."""
        parents, stack, by_kind, methods = self.parents, self._stack, self._hooks, self._methods
        none: tuple[list[Callable[[cst.CSTNode], object]], ...] = ([], [])

        def go(node: cst.CSTNode, /) -> None:
            stack.append(node)
            kind = type(node)
            hooks = by_kind.get(kind)
            if hooks is None:
                hooks = by_kind[kind] = methods.get(kind.__name__, none)
            for method in hooks[0]:
                method(node)
            for child in children(node):
                parents[id(child)] = node
                go(child)
            for method in hooks[1]:
                method(node)
            stack.pop()

        try:
            go(root)
        finally:
            # ``go`` refers to itself through its closure: left as it is, that cycle would keep the
            # rules, the parent map and so the whole tree alive until the cycle collector found it
            go = released


def analyse(module: cst.Module, rules: Sequence[type[Transform]], options: Options,
            path: str, source: bytes, inherited: cst.Module | None = None) -> tuple[list[Report], Parents]:
    """Every rule's reports on ``module``, from one walk (``inherited``: the statements a notebook's
    earlier cells ran that this cell relies on)."""
    names = collect_imports(module, collect_imports(inherited) if inherited is not None else None)
    ctx = FileContext(module=module, names=names, options=options, path=path, source=source, inherited=inherited)
    reporter = Reporter()
    dispatch = _Dispatch([rule.for_file(ctx, reporter) for rule in rules], ctx)
    dispatch.walk(module)
    return drop_claimed(reporter.reports, dispatch.parents), dispatch.parents
