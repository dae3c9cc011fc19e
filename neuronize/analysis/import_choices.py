"""The imports a program chooses among: an ``if``/``elif``/``else`` of a script's flow (its top level
or its ``if __name__ == "__main__":`` block) each branch of which imports a module, one of which
runs whenever the script does (``if opt.ff: from nerf.network_ff import NeRFNetwork`` ``elif
opt.tcnn: from nerf.network_tcnn import NeRFNetwork`` ``else: from nerf.network import
NeRFNetwork``). Read with :mod:`ast` from the bytes of the files whose import lines the import
graph finds under an ``if`` or an ``else``; the code is never imported or run."""

from __future__ import annotations

import ast
import re

#: the opening line of a branch of an ``if`` chain (stripped of its indentation)
BRANCH_OPENER = re.compile(rb"(?:el)?if\b|else\s*:")


def import_choices(source: bytes, package: list[str]) -> list[list[list[str]]]:
    """Each choice of ``source`` (``package``: the dotted parts of the package the file is in, for
    relative imports): its branches, each with the modules it imports (as
    :func:`neuronize.analysis.kernel_imports.import_graph` names them, ``a`` and ``a.b`` for ``from a
    import b``). Only choices that end in an ``else`` and import in every branch."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    flow = list(tree.body)
    flow += [s for main in tree.body if isinstance(main, ast.If) and _is_main_test(main.test) for s in main.body]
    choices = []
    for statement in flow:
        if isinstance(statement, ast.If) and not _is_main_test(statement.test):
            branches = [[name for s in body for name in _imported(s, package)] for body in _branches(statement)]
            if branches and all(branches):
                choices.append(branches)
    return choices


def _branches(head: ast.If) -> list[list[ast.stmt]]:
    """The bodies of the chain ``head`` starts, or none if it has no ``else``."""
    bodies = [head.body]
    while len(head.orelse) == 1 and isinstance(head.orelse[0], ast.If):
        head = head.orelse[0]
        bodies.append(head.body)
    return [*bodies, head.orelse] if head.orelse else []


def _imported(statement: ast.stmt, package: list[str]) -> list[str]:
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if not isinstance(statement, ast.ImportFrom):
        return []
    module = statement.module or ""
    if statement.level:  # relative: against the file's own package
        base = package[:len(package) - statement.level + 1]
        module = ".".join([*base, module] if module else base)
    return [module, *(f"{module}.{alias.name}" for alias in statement.names)]


def _is_main_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))
