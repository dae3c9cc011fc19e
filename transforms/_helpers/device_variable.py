"""The program's own device variable: ``device = "cuda" if torch.cuda.is_available() else "cpu"``,
bound once, seen from a place that hard-codes ``"cuda"``.

Where a program has chosen its device in a variable, a placement that still names CUDA
(``x.to("cuda")``, ``batch.cuda()``, ``torch.zeros(3, device="cuda")``) is migrated best by naming
that variable: the choice says ``"cuda"`` on every host where CUDA is available, which is where the
hard-coded placement ran (it raised anywhere else), and after the migration it says ``"neuron"`` on
Trainium. That is the edit a person makes, and it keeps the program's placements on one device on
every host (a separate host test per site would not, where the choice is held back or ``--target``
differs).

A variable qualifies when it is bound exactly once in its scope (a module, a function, or an
earlier cell of the notebook: ``FileContext.inherited``), by a statement of that scope's own body,
to the availability idiom whose CUDA device is the site's string (or its Neuron-first migration);
the site sits in a later statement of that scope, and no scope between them binds the name.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.walk import children, iter_syntax
from neuronize.transforms._helpers.device_choice import LiteralEdit, idiom_branch, neuron_first
from neuronize.transforms._helpers.literals import string_value

def chosen_device(ctx: FileContext, node: cst.BaseExpression) -> LiteralEdit | None:
    """``node``, a CUDA device string a placement names, as the program's device variable; in a
    method of a class that places its other tensors on ``self.device``, as that attribute."""
    value = string_value(node)
    name = program_device(ctx, value) if value is not None else None
    if name is not None:
        return LiteralEdit(cst.Name(name), (), f': the device the program chose, `"{value}"` wherever CUDA is '
                                               "available (where this placement ran) and Neuron on Trainium", False)
    if value == "cuda" and _places_on_own_device(ctx):
        return LiteralEdit(cst.Attribute(cst.Name("self"), cst.Name("device")), (),
                           ": the device the object places its other tensors on (`.to(self.device)`)", False)
    return None


def _places_on_own_device(ctx: FileContext) -> bool:
    """The node being visited sits in a method of a class whose methods place tensors with
    ``.to(self.device)``, an attribute its base class sets."""
    method = next((a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
    owner = next((a for a in ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
    if method is None or owner is None or not any(a is method for a in owner.body.body):
        return False
    key = ("places on self.device", id(owner))
    if key not in ctx.memo:
        ctx.memo[key] = any(
            isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "to"
            and any(a.keyword is None and dotted_name(a.value) == "self.device" for a in n.args) for n in iter_syntax(owner)
        ) and not any(isinstance(n, cst.AssignTarget) and dotted_name(n.target) == "self.device" for n in iter_syntax(owner))
    # in `__init__`, the attribute comes from a base class's (the class never assigns it itself)
    return bool(ctx.memo[key]) and (method.name.value != "__init__" or bool(owner.bases))


def program_device(ctx: FileContext, literal: str) -> str | None:
    """The name of the device variable that holds the program's choice at the node being visited,
    whose CUDA device is ``literal`` (``"cuda"``); None when there is none (see the module)."""
    shadowed: set[str] = set()
    in_function = False  # a class body is no enclosing scope for the functions defined in it
    for depth in range(len(ctx.stack) - 1, -1, -1):
        scope = ctx.stack[depth]
        if isinstance(scope, (cst.ClassDef, cst.Lambda)):
            if not (in_function and isinstance(scope, cst.ClassDef)):
                shadowed.update(_bound(ctx, scope))
            in_function = in_function or isinstance(scope, cst.Lambda)
        if not isinstance(scope, (cst.Module, cst.FunctionDef)):
            continue
        after = _index_in(_body(scope), ctx.stack[depth + 1:])
        for name, (index, chosen) in _choices(ctx, scope).items():
            if name not in shadowed and chosen == literal and after is not None and index < after:
                return name
        shadowed.update(_bound(ctx, scope))
        in_function = True
    return None


def _body(scope: cst.Module | cst.FunctionDef) -> Sequence[cst.CSTNode]:
    if isinstance(scope, cst.Module):
        return list(scope.body)
    return list(scope.body.body) if isinstance(scope.body, cst.IndentedBlock) else []


def _index_in(body: Sequence[cst.CSTNode], below: Sequence[cst.CSTNode]) -> int | None:
    """The index in ``body`` of the statement the path ``below`` passes through."""
    ids = {id(statement): i for i, statement in enumerate(body)}
    for node in below[:2]:  # a module's statement is its child; a function's sits under its block
        if id(node) in ids:
            return ids[id(node)]
    return None


def _choices(ctx: FileContext, scope: cst.Module | cst.FunctionDef) -> dict[str, tuple[int, str]]:
    """name -> (index of its binding statement in the scope's body, the CUDA device it chooses), for
    the scope's device variables; a module's include an earlier cell's (index -1)."""
    key = ("device variables", id(scope))
    if key not in ctx.memo:
        bound = _bound(ctx, scope)
        found: dict[str, tuple[int, str]] = {}
        statements = list(enumerate(_body(scope)))
        if isinstance(scope, cst.Module) and ctx.inherited is not None:
            statements = [(-1, s) for s in ctx.inherited.body] + statements
        for index, statement in statements:
            chosen = _chosen(ctx, statement)
            if chosen is not None and (index < 0 and chosen[0] not in bound or bound.get(chosen[0]) == 1):
                found[chosen[0]] = (index, chosen[1])
        ctx.memo[key] = found
    return ctx.memo[key]


def _chosen(ctx: FileContext, statement: cst.CSTNode) -> tuple[str, str] | None:
    """``(name, CUDA device)`` for ``name = <the availability idiom>`` (``torch.device(...)`` of it
    too, and its Neuron-first migration)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
        target, value = assign.targets[0].target, assign.value
    elif isinstance(assign, cst.AnnAssign) and assign.value is not None:
        target, value = assign.target, assign.value
    else:
        return None
    if not isinstance(target, cst.Name):
        return None
    if isinstance(value, cst.Call) and len(value.args) == 1 and isinstance(value.args[0].value, cst.IfExp) \
            and (ctx.qualify(value.func) or "") == "torch.device":
        value = value.args[0].value
    if isinstance(value, cst.IfExp) and neuron_first(value):
        value = value.orelse
    found = idiom_branch(ctx, value) if isinstance(value, cst.IfExp) else None
    if found is None:
        return None
    device = string_value(found[1])
    return (target.value, device) if device is not None else None


def _bound(ctx: FileContext, scope: cst.CSTNode) -> dict[str, int]:
    """How often each name is bound in ``scope`` itself (not in the scopes nested in it): targets
    of assignments, loops, ``with``, ``except``, imports, definitions, parameters; at module
    level, a function's ``global`` declaration binds too."""
    key = ("bound names", id(scope))
    if key in ctx.memo:
        return ctx.memo[key]
    counts: dict[str, int] = {}

    def add(target: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Name):
            counts[target.value] = counts.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value)
        elif isinstance(target, cst.StarredElement):
            add(target.value)

    def go(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not scope:
            add(node.name)
            return
        if isinstance(node, cst.Lambda) and node is not scope:
            return
        if isinstance(node, cst.AssignTarget) or isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For)):
            add(node.target)
        elif isinstance(node, (cst.AsName, cst.NamedExpr)):
            add(node.name if isinstance(node, cst.AsName) else node.target)
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            add(cst.Name(str(node.evaluated_name).split(".")[0]))
        elif isinstance(node, cst.Param):
            add(node.name)
        elif isinstance(node, cst.Del):
            add(node.target)
        for child in children(node):
            go(child)

    go(scope)
    if isinstance(scope, cst.Module) and b"global" in ctx.source:
        for node in iter_syntax(scope):
            if isinstance(node, cst.Global):
                for item in node.names:
                    add(item.name)
    ctx.memo[key] = counts
    return counts
