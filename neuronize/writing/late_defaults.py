"""A parameter default the migration writes is never a device query evaluated at import.

Python evaluates a default once, when the ``def`` runs: at import for a module-level function.
A host-aware device the migration writes there (``device: str = torch.accelerator.
current_accelerator().type if torch.accelerator.is_available() else "cpu"``, or ``"neuron" if
on_neuron() else "cuda"``) would query the accelerator as the module is imported, before the
program could set ``CUDA_VISIBLE_DEVICES`` or fork, and would make a 150-character signature.
:func:`late_defaults` writes what a person would: the default becomes ``None`` and the body
resolves it first::

    def load(path, device: str | None = None):
        if device is None:
            device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"

Only defaults this run wrote and holding a call are moved (a plain ``"neuron"`` is a constant; a
default the source already held, beside one the run rewrote, keeps the value the ``def`` gave it);
lambdas keep theirs (they have no statements), and so does a framework's declaration whose
argument the run rewrote (FastAPI's ``device: str = Query("neuron" if on_neuron() else "cuda")``:
the framework reads the default from the signature). An annotation admits ``None`` as the
file can evaluate it: ``str | None`` where the file postpones annotations (``from __future__
import annotations``) or writes ``X | None`` already, or the annotation is a ``|`` union itself
(``str | torch.device | None``), else ``Optional[str]`` (a module-level
``def`` evaluates its annotations at import, and ``|`` between types needs Python 3.10, which
torch releases with ``torch.accelerator`` do not all require).
"""

from __future__ import annotations

import re

import libcst as cst

from neuronize.analysis.context import dotted_name
from neuronize.analysis.import_safety import lazy_annotations
from neuronize.analysis.syntax import is_docstring, iter_statements
from neuronize.analysis.subtrees import code as _code, has_call, paths_to
from neuronize.types import ImportRequest
from neuronize.writing.imports import apply_imports


#: FastAPI's declarations of a request parameter, whose first argument is its default
#: (``device: str = Query("cuda", description=...)``)
FASTAPI_PARAMETERS = ("Query", "Form", "Body", "Header", "Cookie", "Path")
#: callees whose call as a default declares a parameter to a framework that reads the signature
#: (FastAPI's, pydantic's ``Field``, Typer's ``Option``): never moved
_DECLARATIONS = frozenset({*FASTAPI_PARAMETERS, "File", "Depends", "Field", "Option", "Argument"})
#: ``X | None`` the file already writes: it runs on a Python that evaluates it
_UNION_WRITTEN = re.compile(rb"\|\s*None\b")


def _optional(annotation: cst.Annotation | None, union: bool) -> cst.Annotation | None:
    """``annotation`` widened to admit ``None`` (kept when it already does): ``X | None`` with
    ``union`` or where it is a union written with ``|`` itself (``str | torch.device``), else
    ``Optional[X]``."""
    if annotation is None:
        return None
    written = _code(annotation.annotation)
    if "None" in written or "Optional" in written or "Any" in written:
        return annotation
    if union or _is_union(annotation.annotation):
        widened: cst.BaseExpression = cst.BinaryOperation(
            left=annotation.annotation, operator=cst.BitOr(), right=cst.Name("None"))
    else:
        widened = cst.Subscript(value=cst.Name("Optional"),
                                slice=[cst.SubscriptElement(cst.Index(annotation.annotation))])
    return annotation.with_changes(annotation=widened)


def _is_union(node: cst.BaseExpression) -> bool:
    """``node`` is a union written with ``|``: the file's Python evaluates it."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)


def _resolve(name: str, value: cst.BaseExpression, module: cst.Module) -> cst.If:
    """``if name is None: name = value``, in ``module``'s indentation and newlines."""
    nl, indent = module.default_newline, module.default_indent
    assign = cst.SimpleStatementLine(body=[cst.Assign(
        targets=[cst.AssignTarget(cst.Name(name))], value=value.with_changes(lpar=(), rpar=()))])
    test = cst.parse_expression(f"{name} is None")
    statement = cst.parse_statement(f"if {name} is None:{nl}{indent}pass{nl}", config=module.config_for_parsing)
    assert isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock)
    return statement.with_changes(test=test, body=statement.body.with_changes(body=[assign]))


def late_defaults(module: cst.Module, source: bytes) -> cst.Module:
    """``module`` (a rewrite of ``source``) with each default this run wrote that calls something
    resolved in its function's body instead."""
    from neuronize.analysis.positions import on_changed_lines

    params = [(func, param) for func in iter_statements(module.body) if isinstance(func, cst.FunctionDef)
              and isinstance(func.body, cst.IndentedBlock)
              for param in (*func.params.params, *func.params.kwonly_params)
              if param.default is not None and has_call(param.default)]
    if not params:
        return module
    written = on_changed_lines(module, source, (param.default for _, param in params))  # type: ignore[misc]
    moved: dict[int, list[cst.Param]] = {}  # id of a function -> its parameters whose default moves
    for func, param in params:
        # a default the source already held (`dtype=torch.get_default_dtype()` beside a device the
        # run rewrote, on the same line) keeps its value from the `def`'s run
        default = param.default
        if isinstance(default, cst.Call) and (dotted_name(default.func) or "").rsplit(".", 1)[-1] in _DECLARATIONS:
            continue  # the framework reads the declaration from the signature
        if default is not None and id(default) in written and _code(default).encode() not in source:
            moved.setdefault(id(func), []).append(param)
    if not moved:
        return module
    moving = {id(param) for params in moved.values() for param in params}
    on_path = paths_to(module, [*moved, *moving])

    class _Move(cst.CSTTransformer):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return on_path is None or id(node) in on_path

        def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
            if id(original) in moving:
                return updated.with_changes(default=cst.Name("None"), annotation=_optional(updated.annotation, union))
            return updated

        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            params = moved.get(id(original))
            if not params:
                return updated
            body: list[cst.BaseStatement] = list(updated.body.body)  # type: ignore[arg-type]
            at = 1 if body and is_docstring(body[0]) else 0
            checks = [_resolve(p.name.value, p.default, module) for p in params]  # type: ignore[arg-type]
            return updated.with_changes(body=updated.body.with_changes(body=[*body[:at], *checks, *body[at:]]))

    union = lazy_annotations(module) or _UNION_WRITTEN.search(source) is not None
    subscripted = any(isinstance(widened.annotation, cst.Subscript) and widened is not param.annotation
                      for params in moved.values() for param in params
                      if (widened := _optional(param.annotation, union)) is not None)
    result = module.visit(_Move())
    assert isinstance(result, cst.Module)
    return apply_imports(result, [ImportRequest("typing", "Optional")]) if subscripted else result
