"""Names a module loads and binds nowhere: the engine checks that fixes add none (a
``torch.bfloat16`` written into a file that never imports ``torch`` is a NameError at run time)."""

from __future__ import annotations

import ast
import builtins

_ALWAYS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__path__",
                                      "__builtins__", "__loader__", "__package__", "__annotations__"}


def undefined_names(tree: ast.Module) -> set[str] | None:
    """Names loaded somewhere in ``tree`` and bound nowhere in it (scopes are not told apart: a
    cheap, one-sided test). None when a star import makes the question unanswerable."""
    found = _loaded_and_bound(tree)
    return None if found is None else found[0] - found[1]


def _loaded_and_bound(tree: ast.Module) -> tuple[set[str], set[str]] | None:
    bound: set[str] = set(_ALWAYS)
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound |= set(node.names)
    return loaded, bound


def introduced(before: ast.Module, after: ast.Module, inherited: ast.Module | None = None) -> set[str]:
    """The undefined names ``after`` has and ``before`` had not, besides those ``inherited`` binds
    (what a notebook's earlier cells ran)."""
    old, new = undefined_names(before), undefined_names(after)
    if old is None or new is None:
        return set()
    known = _loaded_and_bound(inherited) if inherited is not None else None
    return new - old - (known[1] if known is not None else set())
