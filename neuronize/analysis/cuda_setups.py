"""The project's functions that set up NCCL processes for whoever calls them: a fact about the
run, found before any file is analysed.

``def init_distributed_mode(args): ... dist.init_process_group(backend="nccl", ...)`` in the
project's utilities is the first thing each of its training and evaluation scripts calls. A
script whose devices move to Neuron while that set-up stays NCCL runs nowhere new: Trainium
stops at the process group, before any moved line. The call is then a pin (NRN407): the device
edits of the calling script wait for the set-up's own migration.

Only a set-up the function always makes counts: a statement of its own body (not under an ``if``,
a loop or a ``try:``, where the author chose when to make it), with no ``return`` before it (a
single-process run that returns early needs no process group). So does a function that calls such a
set-up in its own body, through the project's modules (``setup(args)`` calling
``default_setup()`` calling ``distributed.enable()``). Files are parsed with :mod:`ast`
(read-only, and fast) only where they name ``nccl`` or a set-up found so far.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import PurePath

from neuronize.analysis.project_functions import dotted, found_functions, names_one_of

_CREATES = ("init_process_group",)


def cuda_setups(files: Iterable[tuple[PurePath, bytes]]) -> frozenset[str]:
    """The dotted names (``pkg.utils.init_distributed_mode``, from the files' common folder) of the
    module-level functions of ``files`` (a path relative to that folder, the bytes) that always
    create an NCCL process group, themselves or through another such function."""
    return frozenset(found_functions(files, [b"nccl"], lambda function, module, imported, found: (
        True if _sets_up(function, module, imported, frozenset(found)) else None)))


def _sets_up(function: ast.FunctionDef | ast.AsyncFunctionDef, module: str, imported: dict[str, str],
             found: frozenset[str]) -> bool:
    for statement in function.body:
        if any(isinstance(node, ast.Return) for node in ast.walk(statement)):
            return False  # it may end before the set-up (single-process runs return early)
        if isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Call):
            call = statement.value
            local = isinstance(call.func, ast.Name) and call.func.id not in imported  # a function of this module
            called = f"{module}.{call.func.id}" if local else dotted(call.func, imported) or ""  # type: ignore[attr-defined]
            if called.rsplit(".", 1)[-1] in _CREATES and _nccl(call) or names_one_of(called, found):
                return True
    return False


def _nccl(call: ast.Call) -> bool:
    """The call's backend (its ``backend=`` or first argument) is the string ``"nccl"``."""
    given = next((k.value for k in call.keywords if k.arg == "backend"), call.args[0] if call.args else None)
    return isinstance(given, ast.Constant) and given.value == "nccl"
