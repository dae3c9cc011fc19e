"""``--target accelerator`` names the device it detects once per scope.

Where a CUDA device stood, the accelerator target writes the detected device,
``torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"``
(:func:`neuronize.transforms._helpers.per_target.device`), and derives two more expressions from it: the
compile backend (``"neuron" if torch.accelerator.is_available() and
torch.accelerator.current_accelerator().type == "neuron" else "inductor"``) and autocast's device
(the same test, ``else "cuda"``). Written out at every place, a migrated training function
repeats that line a dozen times. When one run writes them twice or more in one scope (the
module's top level or a function body), :func:`name_device` assigns the device once, in that
scope, just before the statement that first uses it, and the places the run wrote read the name:

- the device: ``device`` (``DEVICE`` at module level);
- the compile backend: ``"neuron" if device == "neuron" else "inductor"`` (``device`` is ``"cpu"``
  where no accelerator is found, so the test is the one written out);
- autocast's device: ``device if torch.accelerator.is_available() else "cuda"``;
- any other choice on the test "the accelerator is Neuron" (the bf16 of a CUDA autocast,
  ``torch.bfloat16 if <it> else None``): the test becomes ``device == "neuron"``.

What it keeps: the value is computed in the scope that used it, before its first use there and
not earlier (a module that sets ``CUDA_VISIBLE_DEVICES`` in ``main()`` still does so before CUDA
is first queried); the same expression written by hand stays as it is (only lines this run
changed are renamed); a name the module uses anywhere is never taken (``device`` then
``accelerator_device``, ``accelerator_device_2``...). A class body keeps the expression (its
names are not visible in its methods), and so does the CUDA index the target keeps for CUDA
(``f"cuda:{rank}" if torch.cuda.is_available() else <device>``).

:func:`chosen_from_device` lets rules recognise what this writes as already portable, so a second
run changes and reports nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import one_line
from neuronize.analysis.walk import visit
from neuronize.analysis.subtrees import code as _code, free_name

_T = r"(?P<t>[A-Za-z_]\w*)"
#: the device (``else "cpu"``) and autocast's device (``else "cuda"``), as ``_target`` writes them
_DEVICE_TEXT = (_T + r"\.accelerator\.current_accelerator\(\)\.type if (?P=t)\.accelerator\.is_available\(\) "
                r"else (?P<q>['\"])(?P<fallback>cpu|cuda)(?P=q)")
_DEVICE = re.compile(_DEVICE_TEXT)
#: the same in a line of code, in its parentheses first
_WRITTEN = (re.compile(r"\(" + _DEVICE_TEXT + r"\)"), _DEVICE)
#: the test "the accelerator is Neuron" (``_target.neuron_present``), of the compile backend and
#: of bf16 in a CUDA autocast: ``<x> if <it> else <y>`` (also behind ``hasattr(torch, "accelerator")``,
#: as the neuron target writes it)
_NEURON_TEST = re.compile(r"(?:hasattr\((?P<h>[A-Za-z_]\w*), (?P<hq>['\"])accelerator(?P=hq)\) and )?"
                          + _T + r"\.accelerator\.is_available\(\) and "
                          r"(?P=t)\.accelerator\.current_accelerator\(\)\.type == (?P<q>['\"])neuron(?P=q)")
#: the names a scope's device gets, in order of preference (then ``_2``, ``_3``...)
_DEVICE_NAMES = {True: ("DEVICE", "ACCELERATOR_DEVICE"), False: ("device", "accelerator_device")}
#: parents of a Name that may bind it (a few only read it too: counted all the same)
_BINDS = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.AsName, cst.NamedExpr,
          cst.Param, cst.NameItem, cst.ImportAlias, cst.ExceptHandler, cst.FunctionDef, cst.ClassDef,
          cst.Del, cst.Element, cst.StarredElement)
#: calls that can rebind any name at run time
_DYNAMIC = frozenset({"exec", "globals", "locals", "vars"})


@dataclass(frozen=True)
class _Use:
    node: cst.IfExp
    match: re.Match[str]
    path: tuple[cst.CSTNode, ...]  # the module down to the node, inclusive
    scope: cst.CSTNode  # the Module or the FunctionDef whose body evaluates the node

    def replaced(self, name: str) -> cst.BaseExpression:
        m, q = self.match, self.match["q"]
        if self.match.re is _NEURON_TEST:
            return self.node.with_changes(test=cst.parse_expression(f"{name} == {q}neuron{q}"))
        if m["fallback"] == "cuda":
            code = f"{name} if {m['t']}.accelerator.is_available() else {q}cuda{q}"
        else:
            return cst.Name(name)  # a name needs no parentheses
        return cst.parse_expression(code).with_changes(lpar=self.node.lpar, rpar=self.node.rpar)

    def device(self) -> cst.BaseExpression:
        t, q = self.match["t"], self.match["q"]
        return cst.parse_expression(f"{t}.accelerator.current_accelerator().type if "
                                    f"{t}.accelerator.is_available() else {q}cpu{q}")


class _Collect(cst.CSTVisitor):
    """Every expression of the three forms, with its path and scope; and every name the module
    uses (attributes and keyword argument names aside)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.uses: list[_Use] = []
        self.names: set[str] = set()
        self.bound: Counter[str] = Counter()  # an over-count: any name in a place that may bind it

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if isinstance(node, cst.Name):
            parent = self.stack[-2]
            if not (isinstance(parent, cst.Attribute) and parent.attr is node
                    or isinstance(parent, cst.Arg) and parent.keyword is node):
                self.names.add(node.value)
            if isinstance(parent, _BINDS):
                self.bound[node.value] += 1
        if isinstance(node, cst.IfExp):
            match = _DEVICE.fullmatch(one_line(node)) or _NEURON_TEST.fullmatch(one_line(node.test))
            if match is not None:
                scope = _scope(self.stack)
                if scope is not None and not _keeps_cuda_index(self.stack):
                    self.uses.append(_Use(node, match, tuple(self.stack), scope))
                return False
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _scope(path: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
    """The Module or FunctionDef whose code evaluates ``path[-1]``; None inside a class body."""
    for parent, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
        if isinstance(parent, cst.FunctionDef) and child is parent.body:
            return parent
        if isinstance(parent, cst.ClassDef) and child is parent.body:
            return None
    return path[0]


def _keeps_cuda_index(path: Sequence[cst.CSTNode]) -> bool:
    """``path[-1]`` is the fallback of ``<CUDA device> if torch.cuda.is_available() else ...``."""
    parent = path[-2] if len(path) > 1 else None
    return isinstance(parent, cst.IfExp) and parent.orelse is path[-1] and "cuda" in _code(parent.test)


def _introduced(uses: list[_Use], module: cst.Module, source: bytes) -> list[_Use]:
    """The uses on lines this run changed."""
    from neuronize.analysis.positions import on_changed_lines

    written = on_changed_lines(module, source, (u.node for u in uses))
    return [u for u in uses if id(u.node) in written]


def _placement(uses: list[_Use]) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The block that holds every use (the deepest), and its statement that holds the first."""
    common = 0
    first = uses[0].path
    while all(len(u.path) > common and u.path[common] is first[common] for u in uses):
        common += 1
    scope = uses[0].scope
    inside = scope is first[0]  # the module's top level is the module's scope
    block = None
    for depth in range(common):
        node = first[depth]
        if node is getattr(scope, "body", None):
            inside = True
        if inside and isinstance(node, (cst.Module, cst.IndentedBlock)) and depth + 1 < len(first):
            block = (node, first[depth + 1])
    return block


def _value_of(stmt: cst.CSTNode) -> cst.CSTNode | None:
    """The value of ``stmt`` when it is ``name = value``."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            return assign.value
    return None


def _assigned_once(stmt: cst.CSTNode, first: _Use, collect: _Collect) -> str | None:
    """The name ``stmt`` assigns the first use to, when it is the only statement that binds it
    (the name then holds the device wherever the later uses read it)."""
    if _value_of(stmt) is not first.node or collect.names & _DYNAMIC:
        return None
    name = stmt.body[0].targets[0].target.value  # type: ignore[attr-defined]
    return name if collect.bound[name] == 1 else None


def _with_definition(stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement, name: str,
                     value: cst.BaseExpression) -> list[cst.BaseStatement]:
    """``name = value`` before ``stmt``: it takes the blank lines above ``stmt``, which keeps its
    comments (and, a def or class, its blank lines too)."""
    lines = list(stmt.leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    kept = lines[blank:]
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        kept = lines[:blank] + kept
    definition = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)], leading_lines=lines[:blank])
    return [definition, stmt.with_changes(leading_lines=kept)]


class _Rename(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.BaseExpression],
                 definitions: dict[int, tuple[int, str, cst.BaseExpression]]) -> None:
        super().__init__()
        self.replacements = replacements
        self.definitions = definitions  # block id -> (id of its statement, name, value)

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        if id(original_node) in self.replacements:
            return self.replacements[id(original_node)]
        if id(original_node) in self.definitions:
            key, name, value = self.definitions[id(original_node)]
            index = next(i for i, s in enumerate(original_node.body) if id(s) == key)
            body = list(updated_node.body)
            body[index:index + 1] = _with_definition(body[index], name, value)
            return updated_node.with_changes(body=body)
        return updated_node


def name_device(module: cst.Module, source: bytes) -> cst.Module:
    """``module`` (the accelerator target's rewrite of ``source``) with the device named once
    per scope that this run made use it twice or more; ``module`` itself when none does."""
    collect = _Collect()
    visit(module, collect)
    if len(collect.uses) < 2:
        return module
    by_scope: dict[int, list[_Use]] = {}
    for use in _introduced(collect.uses, module, source):
        by_scope.setdefault(id(use.scope), []).append(use)
    replacements: dict[int, cst.BaseExpression] = {}
    definitions: dict[int, tuple[int, str, cst.BaseExpression]] = {}
    for uses in by_scope.values():
        placed = _placement(uses) if len(uses) > 1 else None
        if placed is None or id(placed[0]) in definitions:
            continue
        block, stmt = placed
        name = _assigned_once(stmt, uses[0], collect)
        if name is not None:
            uses = uses[1:]  # the assignment stays: it names the device
        else:
            name = free_name(_DEVICE_NAMES[uses[0].scope is module], collect.names)
            definitions[id(block)] = (id(stmt), name, uses[0].device())
        replacements.update((id(u.node), u.replaced(name)) for u in uses)
    if not replacements:
        return module
    return module.visit(_Rename(replacements, definitions))


# -- recognising what this writes -------------------------------------------------------------
def spelled_devices(code: str, words: str) -> str:
    """``code`` with each device the accelerator target writes (``... else "cpu"``, with its
    parentheses) replaced by ``words``: how a message names it."""
    for pattern in _WRITTEN:
        code = pattern.sub(lambda m: words if m["fallback"] == "cpu" else m[0], code)
    return code


def chooses_neuron(expr: cst.CSTNode) -> bool:
    """``expr`` is a compile backend chosen at run time: ``"neuron"`` if some test holds, else
    ``"inductor"`` (the accelerator target's, written out or through a named device)."""
    return (isinstance(expr, cst.IfExp) and isinstance(expr.body, cst.SimpleString)
            and isinstance(expr.orelse, cst.SimpleString) and expr.body.evaluated_value == "neuron"
            and expr.orelse.evaluated_value == "inductor")


def device_names(module: cst.Module) -> frozenset[str]:
    """Names a statement of ``module`` assigns the detected device to (``device = ...``)."""
    found: set[str] = set()

    class Assigned(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> bool:
            if (len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                    and isinstance(node.value, cst.IfExp)
                    and (m := _DEVICE.fullmatch(one_line(node.value))) is not None and m["fallback"] == "cpu"):
                found.add(node.targets[0].target.value)
            return False

    visit(module, Assigned())
    return frozenset(found)


def chosen_from_device(ctx: FileContext, expr: cst.CSTNode) -> bool:
    """``expr`` reads the detected device: written out, or through a name this module assigns it
    to (:func:`name_device`)."""
    code = _code(expr)
    if "current_accelerator" in code:
        return True
    if "device" not in code.lower():
        return False
    return bool(set(re.findall(r"[A-Za-z_]\w*", code)) & device_names(ctx.module))
