"""The imports the applied fixes asked for, added (after the environment settings that open the
module) or removed once, at the end of a round."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TypeVar

import libcst as cst

from neuronize.analysis.subtrees import code
from neuronize.analysis.syntax import imported_names
from neuronize.types import ImportRequest


def apply_imports(module: cst.Module, requests: Iterable[ImportRequest]) -> cst.Module:
    """``module`` with the imports of ``requests`` added (after the environment settings that open
    it) and those they ask to drop removed when nothing uses them."""
    requests = list(dict.fromkeys(requests))
    if not requests:
        return module
    # Imported here: libcst.codemod pulls in libcst.matchers (~0.2 s), needed only by files
    # whose fixes add or remove imports.
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    context = CodemodContext()
    adds = [r for r in requests if not r.remove and not _bound_at_top(module, r)]
    removes = [r for r in requests if r.remove]
    if adds:
        for r in adds:
            AddImportsVisitor.add_needed_import(context, r.module, r.obj, r.asname)
        before = {code(stmt).strip() for stmt in module.body}
        module = _after_environment(module.visit(_top_level(AddImportsVisitor)(context)), before)
    if removes:
        context = CodemodContext()
        for r in removes:
            RemoveImportsVisitor.remove_unused_import(context, r.module, r.obj, r.asname)
        module = RemoveImportsVisitor(context).transform_module(module)
    return module


def _bound_at_top(module: cst.Module, request: ImportRequest) -> bool:
    """Whether a top-level import of ``module`` already binds what ``request`` adds, anywhere at the
    top level: libcst's adder reads only the imports before the first other statement, so a
    module that sets ``sys.path`` before its imports would gain a second ``from typing import ...``."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and any(
                    name.module == request.module and name.name == request.obj
                    and name.asname == request.asname for name in imported_names(small)):
                return True
    return False


_Adder = TypeVar("_Adder", bound=cst.CSTTransformer)


def _top_level(adder: type[_Adder]) -> type[_Adder]:
    """libcst's ``AddImportsVisitor`` entering only what it reads and writes: the module's own
    simple statements (its docstring, its imports, where it inserts). Run whole, it rebuilds
    every node of the module and walks it twice more (a copy for metadata it does not use, and
    its gathering of the leading imports): about ten parses for a file that gains an import."""

    class TopLevel(adder):  # type: ignore[misc, valid-type]
        def visit_Module(self, node: cst.Module) -> None:
            leading = list(itertools.takewhile(lambda stmt: isinstance(stmt, cst.SimpleStatementLine), node.body))
            super().visit_Module(node.with_changes(body=leading))

        def on_visit(self, node: cst.CSTNode) -> bool:
            return bool(super().on_visit(node)) and type(node) in (cst.Module, cst.SimpleStatementLine)

    return TopLevel


def _sets_environment(stmt: cst.BaseStatement) -> bool:
    """``os.environ[...] = ...``, ``os.environ.setdefault(...)``, ``os.putenv(...)``: settings a
    library may read when it is imported, so imports added by fixes go after them."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    text = code(stmt)
    return "environ" in text or "putenv" in text


def _imports_only(stmt: cst.BaseStatement, *also: type) -> bool:
    """A line of import statements (and of ``also``, e.g. a docstring's ``Expr``)."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom, *also)) for s in stmt.body)


def _after_environment(module: cst.Module, before: set[str]) -> cst.Module:
    """Move the import lines the engine added (statements whose code is not in ``before``) below the
    environment settings of the module's opening section."""
    body = list(module.body)
    opening = 0
    while opening < len(body) and (_sets_environment(body[opening]) or _imports_only(body[opening], cst.Expr)):
        opening += 1
    settings = [i for i in range(opening) if _sets_environment(body[i])]
    if not settings:
        return module
    last = settings[-1]
    added = [stmt for stmt in body[:last] if _imports_only(stmt) and code(stmt).strip() not in before]
    if not added:
        return module
    kept = [stmt for stmt in body[: last + 1] if all(stmt is not a for a in added)]
    return module.with_changes(body=[*kept, *added, *body[last + 1:]])
