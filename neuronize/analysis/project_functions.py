"""The project's module-level functions as the facts about the run read them (with :mod:`ast`,
before any file is analysed): a module's dotted name, its tree and what its imports bind, a
function's parameters and calls, the dotted name a call stands for, and whether a call's name,
as a file imports it, names one of them."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import TypeVar

T = TypeVar("T")
#: a fact about a function: a tuple whose first item is the function's dotted name
Named = TypeVar("Named", bound=tuple)
#: what a search asks of a module-level function: its fact given the module's dotted name, what the
#: module's imports bind and the functions found so far (None: the function has none)
Decide = Callable[[ast.FunctionDef | ast.AsyncFunctionDef, str, dict[str, str], dict[str, T]], T | None]


def module_name(relative: PurePath) -> str:
    """The dotted name of the module at ``relative`` (below the files' common folder): a package's
    ``__init__`` is the package."""
    return ".".join(part for part in relative.with_suffix("").parts if part != "__init__")


def names(dotted: str, qualified: str) -> bool:
    """``qualified`` (a call's name as a file imports it: ``app.loading.load_model``) names the
    function ``dotted`` (its name from the files' common folder), imported from any folder above
    the module (``src.app.loading.load_model``)."""
    return dotted == qualified or dotted.endswith(f".{qualified}")


def names_one_of(qualified: str, functions: Iterable[str]) -> bool:
    """``qualified`` (a call's name as a file imports it) names one of ``functions`` (dotted names
    from the files' common folder, :func:`names`)."""
    return any(names(function, qualified) for function in functions)


def named_by(qualified: str, facts: Iterable[Named]) -> Named | None:
    """The first of ``facts`` (each a tuple whose first item is a function's dotted name from the
    files' common folder) that ``qualified`` (a call's name as a file imports it) names (:func:`names`)."""
    return next((fact for fact in facts if names(fact[0], qualified)), None)


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """The names of ``function``'s parameters, in order (``*args`` and ``**kwargs`` left out)."""
    arguments = function.args
    return tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))


def calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls in ``function``'s body, nested functions included."""
    return [node for node in ast.walk(function) if isinstance(node, ast.Call)]


#: calls that pass a device on unchanged in meaning (``str(device)``, ``torch.device(device)``)
_PASS_THROUGH = frozenset({"str", "device"})


def argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    """The value ``call`` gives the parameter ``keyword`` (at ``position``), or None."""
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    return call.args[position] if position < len(call.args) and not any(
        isinstance(a, ast.Starred) for a in call.args[:position + 1]) else None


def params_in(value: ast.expr | None, params: tuple[str, ...]) -> set[str]:
    """The parameter ``value`` is, as it is or through ``str()`` / ``torch.device()``."""
    while isinstance(value, ast.Call) and len(value.args) == 1 and (
            isinstance(value.func, ast.Name) and value.func.id in _PASS_THROUGH
            or isinstance(value.func, ast.Attribute) and value.func.attr in _PASS_THROUGH):
        value = value.args[0]
    return {value.id} if isinstance(value, ast.Name) and value.id in params else set()


def parsed(source: bytes, module: str) -> tuple[ast.Module, dict[str, str]] | None:
    """The module's tree and what its imports bind (:func:`imported_names`), or None where it does
    not parse (the file's own analysis says why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return tree, imported_names(tree, module)


def imported_names(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name -> dotted name, for the module's imports (relative ones against ``module``)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[:-node.level]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound


def dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    """The dotted name ``node`` (a call's function) stands for, through the module's imports."""
    if isinstance(node, ast.Name):
        return imported.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        head = dotted(node.value, imported)
        return None if head is None else f"{head}.{node.attr}"
    return None


def as_called(cls: ast.ClassDef) -> ast.FunctionDef | None:
    """A class as the function a call of it is: named as the class, with the parameters of its
    ``__init__`` after ``self``, and the whole class as its body (what ``__init__`` stores, the
    other methods use); None without an ``__init__`` of its own."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None or not init.args.args:
        return None
    arguments = copy.copy(init.args)
    arguments.args = init.args.args[1:]
    return ast.FunctionDef(name=cls.name, args=arguments, body=cls.body, decorator_list=[], returns=None,
                           type_comment=None, lineno=cls.lineno, col_offset=cls.col_offset)


def found_functions(files: Iterable[tuple[PurePath, bytes]], words: Iterable[bytes], decide: Decide[T],
                    classes: bool = False) -> dict[str, T]:
    """The module-level functions of ``files`` (a path relative to the files' common folder, the
    bytes) that ``decide`` gives a fact, by dotted name, found round by round until nothing more
    is: a function that calls one found in an earlier round may have one too. A file is parsed
    (once) only when it holds one of ``words``, then the last name of a function found in the
    round before. ``classes``: module-level classes too, each as the function a call of it is
    (:func:`as_called`)."""
    pending = [(module_name(relative), source) for relative, source in files]
    trees: dict[str, tuple[ast.Module, dict[str, str]] | None] = {}
    found: dict[str, T] = {}
    needles = list(words)
    while True:
        more: dict[str, T] = {}
        for module, source in pending:
            if not any(w in source for w in needles):
                continue
            if module not in trees:
                trees[module] = parsed(source, module)
            entry = trees[module]
            if entry is None:
                continue  # the file's own analysis says why
            tree, imported = entry
            for node in tree.body:
                function = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                    as_called(node) if classes and isinstance(node, ast.ClassDef) else None
                if function is None:
                    continue
                name = f"{module}.{function.name}"
                if name not in found and name not in more and (fact := decide(function, module, imported, found)) is not None:
                    more[name] = fact
        if not more:
            return found
        found.update(more)
        needles = [name.rsplit(".", 1)[-1].encode() for name in more]
