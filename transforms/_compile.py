"""``torch.compile`` call sites: which calls compile, under which local names."""

from __future__ import annotations

import libcst as cst

from neuronize.context import FileContext
from neuronize.transforms._names import last_name

#: keyword arguments of ``torch.compile`` (all keyword-only after the model)
COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})


def compile_kind(ctx: FileContext, call: cst.Call) -> str | None:
    """``"torch"`` for ``torch.compile(...)`` in any spelling, ``"module"`` for what looks like
    ``nn.Module.compile(...)`` (``model.compile(backend=...)``), else None.

    ``X.compile(...)`` counts only in a file that imports torch, when ``X`` is not an imported
    module (``re.compile``) and every argument is a ``torch.compile`` keyword (Keras'
    ``model.compile(optimizer=..., loss=...)`` is not).
    """
    func = call.func
    if isinstance(func, cst.Name):
        return "torch" if ctx.qualify(func) == "torch.compile" else None
    if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
        return None
    qualified = ctx.qualify(func)
    if qualified == "torch.compile":
        return "torch"
    if qualified is not None or not ctx.names.imports_module("torch"):
        return None
    if isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return None
    for arg in call.args:
        if arg.star == "**":
            continue
        if arg.keyword is None or arg.keyword.value not in COMPILE_KEYWORDS:
            return None
    return "module"



def call_name(func: cst.BaseExpression, aliases: frozenset[str] = frozenset()) -> str:
    """The last name of a call's function; ``"compile"`` for an alias of ``torch.compile``
    (``aliases``: ``local_names(ctx, ["torch.compile"])``)."""
    if isinstance(func, cst.Name) and func.value in aliases:
        return "compile"
    return last_name(func) or ""
