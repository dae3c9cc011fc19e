"""The last checks of a rewritten file, against the file as read: the output must parse, use no
name the source did not define or import, and evaluate no more Neuron-only code at import. A
file that fails one is left alone and gets an error."""

from __future__ import annotations

import ast
import dataclasses
from collections import Counter

import libcst as cst

from neuronize.analysis.import_safety import hazards, neuron_tests
from neuronize.analysis.syntax_error import python_syntax_error
from neuronize.analysis.undefined import introduced
from neuronize.types import FileError


def output_error(source: bytes, output: bytes, module: cst.Module, new: cst.Module,
                 inherited: cst.Module | None = None) -> FileError | None:
    """Why ``output`` (the code of ``new``, rewritten from ``module``, read from ``source``, run
    after the statements ``inherited``, a notebook's earlier cells) must not be written, or None."""
    try:
        tree = ast.parse(output)
    except SyntaxError as exc:
        try:
            ast.parse(source)
            problem = f"internal error: the rewritten file would not parse ({exc.msg}); please report it"
        except SyntaxError:  # libcst accepts what CPython refuses (e.g. `except X, e:`)
            described = python_syntax_error(source)
            assert described is not None
            return dataclasses.replace(described, message=f"{described.message}; left alone")
        return FileError(f"{problem}; left alone", exc.lineno)
    # the safety nets compare the output with the source: one AST of the source serves both
    source_tree = _python_tree(source)
    inherited_tree = _python_tree(inherited.bytes if inherited is not None else b"")
    undefined = introduced(source_tree, tree, inherited_tree) if source_tree is not None else set()
    if undefined:  # a rule wrote a name without asking for its import
        return FileError(f"internal error: the fixes would use undefined name(s) {', '.join(sorted(undefined))}; "
                         "left alone; please report it")
    tests = neuron_tests(new) | (neuron_tests(inherited) if inherited is not None else frozenset())  # an earlier cell's
    added = hazards(tree, tests, output) - (
        hazards(source_tree, neuron_tests(module), source) if source_tree is not None else Counter())
    if added:  # a safety net: the decision stage (policy._import_safe) should have held these fixes back
        return FileError(f"internal error: the rewritten module would evaluate {next(iter(added))} at import; "
                         "left alone")
    return None


def _python_tree(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None

