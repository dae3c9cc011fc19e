"""Value flow: which values reach the place a value is used (a process-group backend, a device).

The one place that follows a value back from its use to where it is set, for the process-group
rule (NRN401) and the device-string rule (NRN101). Read backwards from the use: the literal
itself, the branches of a conditional, either side of ``or``, the default of an environment
lookup; for a name, an assignment in its function or at module level and a parameter default;
for an attribute (``args.backend``, ``cfg.distributed_backend``), an argparse option's
``default=``, an assignment to that attribute anywhere in the file (``args.backend = "nccl"``)
and a class-level default (``distributed_backend: str = "nccl"`` in a dataclass or config class).

A walk records what it sees in :class:`Assignments` (with :func:`assigned` and
:func:`option_names` telling what a statement or an option sets, for every rule alike);
:func:`carried`, :func:`resolve` and :func:`follow` are pure. What is reached only through an
attribute or a class default is marked (:attr:`Reached.via`): other code may set or read the
same attribute, so an edit there is at most unsafe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transforms._helpers.calls import argument, keyword
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.names import last_name

Scope = cst.CSTNode  # a FunctionDef, a ClassDef or the Module
Qualify = Callable[[cst.CSTNode], "str | None"]
Wanted = Callable[[cst.BaseExpression], bool]
#: calls whose value is read from the environment (unknowable), with a default that may reach
ENV_GETTERS = ("os.environ.get", "os.getenv", "os.environ.setdefault")
#: methods whose second argument is a default value (``cfg.get("device", "cuda")``)
LOOKUPS = frozenset({"get", "getenv", "pop", "setdefault"})
#: dataclass / pydantic / attrs field constructors: ``x: str = field(default="nccl")``
FIELD_CALLS = frozenset({"field", "Field"})
#: the functions whose arguments only mean something on CUDA: a value passed to one of them is
#: CUDA's, whatever else it reaches
CUDA_FUNCTION_PREFIXES = ("torch.cuda.", "torch.backends.cuda.", "torch.backends.cudnn.")


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


def alternatives(expr: cst.BaseExpression, qualify: Qualify) -> tuple[tuple[cst.BaseExpression, ...], bool] | None:
    """The expressions whose value ``expr`` may take, and whether some of its value comes from
    elsewhere (unknowable here): the branches of a conditional, either side of ``or``, the default
    of a lookup (``os.environ.get(k, d)``, ``cfg.get(k, d)``, ``getattr(o, n, d)``); not the right
    side of ``call() or d``, the value when a detection finds nothing. None when ``expr`` is none
    of these."""
    if isinstance(expr, cst.IfExp):
        return (expr.body, expr.orelse), False
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        if isinstance(expr.left, cst.Call) and alternatives(expr.left, qualify) is None:
            # `detect_device() or "cuda"`: the right side is what runs when the call finds nothing
            # (a host with no accelerator, where Neuron is absent too): no default to migrate
            return (), True
        return (expr.left, expr.right), False
    if not isinstance(expr, cst.Call):
        return None
    name = last_name(expr.func)
    if qualify(expr.func) in ENV_GETTERS or (name in LOOKUPS and isinstance(expr.func, cst.Attribute)):
        default = argument(expr, "default", 1)
    elif name == "getattr" and isinstance(expr.func, cst.Name):
        default = argument(expr, "default", 2)
    else:
        return None
    return ((default.value,) if default is not None else ()), True


def carried(expr: cst.BaseExpression, wanted: Wanted, qualify: Qualify) -> Found:
    """The literals among the values ``expr`` may evaluate to for which ``wanted`` holds
    (``wanted`` sees string literals and qualified names alike), through :func:`alternatives`."""
    found = Found()
    if string_value(expr) is not None or wanted(expr):
        if wanted(expr):
            found.literals.append(expr)
        return found
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
        return found  # {"cuda": "nccl", ...}[device]: a table, handled where it is written
    alternative = alternatives(expr, qualify)
    if alternative is None:
        found.opaque = True
        return found
    parts, found.opaque = alternative
    for part in parts:
        sub = carried(part, wanted, qualify)
        found.literals += sub.literals
        found.opaque |= sub.opaque
    return found


# -- what a statement or an option sets ----------------------------------------------------------
def field_default(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The default a class-level field gets: ``value`` itself, or the ``default=`` of
    ``field(...)`` / ``Field(...)`` (None when the field has no default)."""
    if isinstance(value, cst.Call) and last_name(value.func) in FIELD_CALLS:
        default = argument(value, "default", 0 if last_name(value.func) == "Field" else None)
        return None if default is None else default.value
    return value


def assigned(node: cst.Assign | cst.AnnAssign) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``(target, value)`` for each target the statement sets; an annotated assignment's value is
    its field default (``device: str = field(default="cuda")`` sets ``"cuda"``)."""
    if isinstance(node, cst.AnnAssign):
        value = None if node.value is None else field_default(node.value)
        if value is not None:
            yield node.target, value
        return
    for target in node.targets:
        yield target.target, node.value


def option_names(call: cst.Call) -> list[str]:
    """The names an argparse ``add_argument(...)`` / click ``option(...)`` is known by: its flags
    (``"--dist-backend"``), then its ``dest=``."""
    names = [string_value(a.value) for a in call.args if a.keyword is None and not a.star]
    dest = keyword(call, "dest")
    if dest is not None:
        names.append(string_value(dest.value))
    return [n for n in names if n]


def option_dest(call: cst.Call) -> str | None:
    """The attribute an argparse ``add_argument(...)`` sets: ``dest=``, else the first long
    option (``--dist-backend`` -> ``dist_backend``), else the first name."""
    dest_arg = keyword(call, "dest")
    dest = string_value(dest_arg.value) if dest_arg is not None else None
    if dest is not None:
        return dest
    options = [o for o in option_names(call) if o]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0] if longs else (options[0] if options else None)
    return None if chosen is None else chosen.lstrip("-").replace("-", "_")


def flow_key(expr: cst.BaseExpression) -> str | None:
    """What a use is followed by: a plain name (``backend``) or an attribute name
    (``.backend`` for ``args.backend`` and ``self.cfg.backend`` alike)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return "." + expr.attr.value
    return None


def cuda_only_uses(call: cst.Call, qualify: Qualify) -> Iterator[tuple[str, str]]:
    """``(key, function)`` for each name or attribute passed to ``call`` when it is a CUDA-only
    function (:data:`CUDA_FUNCTION_PREFIXES`, NCCL's own classes): a value reaching it is CUDA's."""
    qualified = qualify(call.func) or ""
    if not (qualified.startswith(CUDA_FUNCTION_PREFIXES) or "NCCL" in qualified):
        return
    for arg in call.args:
        key = flow_key(arg.value)
        if key is not None:
            yield key, qualified


@dataclass
class Assignments:
    """What a walk of the file saw: values assigned to plain names, per scope; values assigned to
    attributes and class-level defaults, per attribute name; argparse options, per attribute
    they set; and the names and attributes passed to CUDA-only functions."""

    values: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)
    attributes: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    options: dict[str, list[cst.Call]] = field(default_factory=dict)
    cuda_only: dict[str, str] = field(default_factory=dict)

    def assign(self, scope: Scope, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if value is None:
            return
        if isinstance(target, cst.Name):
            self.values.setdefault(id(scope), {}).setdefault(target.value, []).append(value)
            if isinstance(scope, cst.ClassDef):  # a class default, read as `cfg.<name>`
                self.attributes.setdefault(target.value, []).append(value)
        elif isinstance(target, cst.Attribute):
            self.attributes.setdefault(target.attr.value, []).append(value)

    def statement(self, scope: Scope, node: cst.Assign | cst.AnnAssign) -> None:
        for target, value in assigned(node):
            self.assign(scope, target, value)

    def option(self, call: cst.Call) -> None:
        dest = option_dest(call)
        if dest is not None:
            self.options.setdefault(dest, []).append(call)

    def call(self, call: cst.Call, qualify: Qualify) -> None:
        """Record what ``call`` says about values: an option, or a CUDA-only use."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument":
            self.option(call)
        for key, function in cuda_only_uses(call, qualify):
            self.cuda_only.setdefault(key, function)


@dataclass(frozen=True)
class Resolution:
    """What reaches a name or attribute: the values to read with :func:`carried` (``attributes``:
    those reached through an attribute or a class default), the argparse options whose
    ``default=`` / ``choices=`` reach it, and whether it cannot be followed (a parameter without
    default, or nothing found): to be reported."""

    values: tuple[cst.BaseExpression, ...] = ()
    options: tuple[cst.Call, ...] = ()
    unresolved: bool = False
    attributes: tuple[cst.BaseExpression, ...] = ()


def resolve(expr: cst.BaseExpression, scope: Scope, module: cst.Module, seen: Assignments) -> Resolution:
    """What reaches ``expr`` (a Name read in ``scope``, or an attribute: ``args.<attr>`` set by
    argparse, by an assignment or by a class default)."""
    if isinstance(expr, cst.Attribute):
        calls = tuple(seen.options.get(expr.attr.value, ()))
        attributes = tuple(seen.attributes.get(expr.attr.value, ()))
        return Resolution(options=calls, attributes=attributes, unresolved=not calls and not attributes)
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


@dataclass(frozen=True)
class Reached:
    """A wanted literal that reaches a use; ``via`` names the attribute it came through (an
    assignment to it, a class default) when it did: then other code may set or read it too."""

    literal: cst.BaseExpression
    via: str | None = None


@dataclass(frozen=True)
class Followed:
    """All that reaches one use: the literals, the argparse options on the way, whether a part
    cannot be followed, and the CUDA-only function the same name or attribute is passed to."""

    reached: tuple[Reached, ...] = ()
    options: tuple[cst.Call, ...] = ()
    unresolved: bool = False
    cuda_only: str | None = None


def follow(expr: cst.BaseExpression, scope: Scope, module: cst.Module, seen: Assignments,
           wanted: Wanted, qualify: Qualify) -> Followed:
    """Every wanted literal that reaches ``expr`` (the value at its use, read in ``scope``):
    :func:`carried` for the expression itself, then :func:`resolve` for an unqualified name or
    attribute with no literal in sight."""
    direct = carried(expr, wanted, qualify)
    if direct.literals:
        return Followed(tuple(Reached(lit) for lit in direct.literals))
    if not isinstance(expr, (cst.Name, cst.Attribute)) or qualify(expr) is not None:
        return Followed(unresolved=direct.opaque)
    found = resolve(expr, scope, module, seen)
    key = flow_key(expr)
    reached: list[Reached] = []
    opaque = False
    via = cst.Module([]).code_for_node(expr) if isinstance(expr, cst.Attribute) else None
    for values, through in ((found.values, None), (found.attributes, via)):
        for value in values:
            sub = carried(value, wanted, qualify)
            reached += [Reached(lit, through) for lit in sub.literals]
            opaque |= sub.opaque
    for call in found.options:
        default = keyword(call, "default")
        if default is not None:
            reached += [Reached(lit) for lit in carried(default.value, wanted, qualify).literals]
    followed_values = found.values or found.attributes
    unresolved = found.unresolved or bool(followed_values and not reached and opaque and not found.options)
    return Followed(tuple(reached), found.options, unresolved,
                    None if key is None else seen.cuda_only.get(key))
