"""Value flow: what values may reach an argument (NRN401's process-group backend).

Read backwards from the argument: the literal itself, the branches of a conditional, either side
of ``or``, the default of an environment lookup, an assignment to the name in its function or
at module level, a parameter default, an argparse option's ``default=``. The walk records what
it sees in :class:`Assignments`; :func:`carried` and :func:`resolve` are pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

import libcst as cst

from neuronize.context import FileContext
from neuronize.transforms._calls import argument, keyword
from neuronize.transforms._literals import string_value

Scope = cst.CSTNode  # a FunctionDef, a ClassDef or the Module
#: calls whose value is read from the environment (unknowable), with a default that may reach
ENV_GETTERS = ("os.environ.get", "os.getenv", "os.environ.setdefault")


def enclosing_scope(ctx: FileContext) -> Scope:
    """The function or class the node being visited sits in, else the module."""
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return anc
    return ctx.module


@dataclass
class Found:
    """What an expression may evaluate to: the wanted literals found, and whether some part
    cannot be read statically."""

    literals: list[cst.BaseExpression] = field(default_factory=list)
    opaque: bool = False


def carried(expr: cst.BaseExpression, wanted: Callable[[cst.BaseExpression], bool],
            qualify: Callable[[cst.CSTNode], str | None]) -> Found:
    """The literals among the values ``expr`` may evaluate to for which ``wanted`` holds
    (``wanted`` sees string literals and qualified names alike)."""
    found = Found()
    if string_value(expr) is not None or wanted(expr):
        if wanted(expr):
            found.literals.append(expr)
        return found
    parts: tuple[cst.BaseExpression, ...] = ()
    if isinstance(expr, cst.IfExp):
        parts = (expr.body, expr.orelse)
    elif isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        parts = (expr.left, expr.right)
    elif isinstance(expr, cst.Call) and qualify(expr.func) in ENV_GETTERS:
        default = argument(expr, "default", 1)
        found.opaque = True
        if default is not None:
            found.literals += carried(default.value, wanted, qualify).literals
        return found
    elif isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
        return found  # {"cuda": "nccl", ...}[device]: a table, handled where it is written
    else:
        found.opaque = True
        return found
    for part in parts:
        sub = carried(part, wanted, qualify)
        found.literals += sub.literals
        found.opaque |= sub.opaque
    return found


def option_dest(call: cst.Call) -> str | None:
    """The attribute an argparse ``add_argument(...)`` sets: ``dest=``, else the first long
    option (``--dist-backend`` -> ``dist_backend``), else the first name."""
    dest_arg = keyword(call, "dest")
    dest = string_value(dest_arg.value) if dest_arg is not None else None
    if dest is not None:
        return dest
    options = [o for o in (string_value(a.value) for a in call.args if a.keyword is None) if o]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0] if longs else (options[0] if options else None)
    return None if chosen is None else chosen.lstrip("-").replace("-", "_")


@dataclass
class Assignments:
    """What a walk of the file saw: values assigned to plain names, per scope, and argparse
    options, per attribute they set."""

    values: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)
    options: dict[str, list[cst.Call]] = field(default_factory=dict)

    def assign(self, scope: Scope, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if value is not None and isinstance(target, cst.Name):
            self.values.setdefault(id(scope), {}).setdefault(target.value, []).append(value)

    def option(self, call: cst.Call) -> None:
        dest = option_dest(call)
        if dest is not None:
            self.options.setdefault(dest, []).append(call)


@dataclass(frozen=True)
class Resolution:
    """What reaches a name or attribute: the values to read with :func:`carried`, the argparse
    options whose ``default=`` / ``choices=`` reach it, and whether it cannot be followed (a
    parameter without default, or nothing found): to be reported."""

    values: tuple[cst.BaseExpression, ...] = ()
    options: tuple[cst.Call, ...] = ()
    unresolved: bool = False


def resolve(expr: cst.BaseExpression, scope: Scope, module: cst.Module, seen: Assignments) -> Resolution:
    """What reaches ``expr`` (a Name read in ``scope``, or ``args.<attr>`` set by argparse)."""
    if isinstance(expr, cst.Attribute):
        calls = tuple(seen.options.get(expr.attr.value, ()))
        return Resolution(options=calls, unresolved=not calls)
    assert isinstance(expr, cst.Name)
    name = expr.value
    if isinstance(scope, cst.FunctionDef):
        local = seen.values.get(id(scope), {}).get(name, [])
        params = [*scope.params.params, *scope.params.posonly_params, *scope.params.kwonly_params]
        param = next((p for p in params if p.name.value == name), None)
        if local or param is not None:
            # the literals assigned in the body are followed even when the parameter is not
            default = () if param is None or param.default is None else (param.default,)
            return Resolution(values=(*local, *default), unresolved=param is not None and param.default is None)
    values = tuple(seen.values.get(id(module), {}).get(name, ()))
    return Resolution(values=values, unresolved=not values)
