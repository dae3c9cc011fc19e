"""The project's module-level functions as the facts about the run read them (with :mod:`ast`,
before any file is analysed): a module's dotted name, a function's parameters and calls, and
whether a call's name, as a file imports it, names one of them."""

from __future__ import annotations

import ast
from pathlib import PurePath


def module_name(relative: PurePath) -> str:
    """The dotted name of the module at ``relative`` (below the files' common folder): a package's
    ``__init__`` is the package."""
    return ".".join(part for part in relative.with_suffix("").parts if part != "__init__")


def names(dotted: str, qualified: str) -> bool:
    """``qualified`` (a call's name as a file imports it: ``app.loading.load_model``) names the
    function ``dotted`` (its name from the files' common folder), imported from any folder above
    the module (``src.app.loading.load_model``)."""
    return dotted == qualified or dotted.endswith(f".{qualified}")


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """The names of ``function``'s parameters, in order (``*args`` and ``**kwargs`` left out)."""
    arguments = function.args
    return tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))


def calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls in ``function``'s body, nested functions included."""
    return [node for node in ast.walk(function) if isinstance(node, ast.Call)]
