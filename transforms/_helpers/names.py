"""Names: qualified names, their local spellings, and where a name is used."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import imported_names, iter_statements
from neuronize.transform import ImportRequest
from neuronize.transforms._helpers.literals import string_value


def last_name(node: cst.CSTNode) -> str | None:
    """``f`` for ``f`` and ``a.b.f`` (a called function, an attribute); None for anything else."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def target_name(node: cst.CSTNode) -> str | None:
    """``device`` for ``device``, ``self.device``, ``cfg["device"]``; else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            return string_value(index.value)
    return None



def qualified_expr(ctx: FileContext, qualified: str, *, any_torch: bool = False
                   ) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]]:
    """An expression naming ``qualified`` (e.g. ``torch.neuron.synchronize``) in this file.

    Uses the file's own spelling of the top package (``T.neuron.synchronize`` after
    ``import torch as T``) and asks for ``import <package>`` only when the file has none.
    ``any_torch``: the expression runs on every host, so where the project admits a torch before
    2.6 a ``torch.accelerator`` function torch.cuda also has falls back to torch.cuda's there.
    """
    package, _, rest = qualified.partition(".")
    local = [name for name in ctx.names.local_names_for(package) if _readable_here(ctx, name)]
    head = local[0] if local else package
    imports: tuple[ImportRequest, ...] = () if local else (ImportRequest(package),)
    module, _, function = rest.partition(".")
    if any_torch and ctx.options.old_torch and package == "torch" and module == "accelerator" \
            and function in SHARED_WITH_CUDA:
        # the project may run on a torch before 2.6, which has no torch.accelerator: torch.cuda there
        return cst.parse_expression(f'getattr({head}, "accelerator", {head}.cuda).{function}'), imports
    expr = cst.parse_expression(f"{head}.{rest}" if rest else head)
    return expr, imports


def _readable_here(ctx: FileContext, name: str) -> bool:
    """``name``, bound by an import, can be read where the rule is: the import is at the module's
    top level, or in a function around it (``def check(): import torch``): an import in another
    function binds nothing here."""
    if name in ctx.names.top_level:
        return True
    return any(isinstance(small, (cst.Import, cst.ImportFrom)) and any(i.local == name for i in imported_names(small))
               for function in ctx.ancestors() if isinstance(function, cst.FunctionDef)
               for stmt in iter_statements(function.body.body if isinstance(function.body, cst.IndentedBlock) else ())
               if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body)


#: the ``torch.accelerator`` functions of torch 2.6 that ``torch.cuda`` has under the same name,
#: doing the same on a CUDA host
SHARED_WITH_CUDA = frozenset({"synchronize", "device_count", "is_available"})



def local_names(ctx: FileContext, qualified: Iterable[str]) -> frozenset[str]:
    """Local names bound by import to any of ``qualified`` (``amp_autocast`` after ``... as amp_autocast``)."""
    return frozenset(local for q in qualified for local in ctx.names.local_names_for(q))


def mentions(ctx: FileContext, expr: cst.CSTNode, qualified: frozenset[str]) -> bool:
    """``expr`` names one of ``qualified`` somewhere (``T.bfloat16 if x else T.float16``)."""
    if isinstance(expr, (cst.Attribute, cst.Name)) and ctx.qualify(expr) in qualified:
        return True
    return any(mentions(ctx, child, qualified) for child in expr.children)


def is_reference(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` (the Name/Attribute being visited) is used as a value, not called or imported.

    Only positions where a value is clearly passed on are counted: an argument, a branch of a
    conditional expression, the value of an assignment, a return value, a container element.
    """
    parent = ctx.parent
    if isinstance(parent, cst.Arg):
        return parent.value is node
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
        return parent.value is node
    if isinstance(parent, cst.IfExp):
        return parent.body is node or parent.orelse is node
    if isinstance(parent, (cst.Element, cst.DictElement)):
        return parent.value is node
    if isinstance(parent, cst.BooleanOperation):
        return True
    if isinstance(parent, cst.Lambda):
        return parent.body is node
    return False



def inside_call_to(ctx: FileContext, qualified: frozenset[str]) -> bool:
    """True when an enclosing call's function resolves to one of ``qualified``."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.Call) and ctx.qualify(anc.func) in qualified:
            return True
    return False
