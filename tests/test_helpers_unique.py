"""One definition of each idea: no two helper modules define the same name.

The helper modules (``transforms/_helpers/*.py``, and the core modules the rules share with the
engine) are grouped by kind (names, literals, calls, imports,
nodes, messages, targets) plus a few families' own knowledge; a name defined twice is a copy
with a small variation waiting to drift.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent
#: the helpers the rules share, and those of the core the rules import too (what both need lives in
#: the core): the passes that shape written code, subtrees, the package and environment tables
_CORE = [*(ROOT / "neuronize" / "writing").glob("*.py"),
         *(ROOT / "neuronize" / "analysis" / name for name in ("subtrees.py", "cuda_packages.py", "cuda_env_vars.py"))]
HELPERS = sorted(p for p in [*(ROOT / "transforms" / "_helpers").glob("*.py"), *_CORE] if p.name != "__init__.py")


def _defined(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def test_helper_modules_exist() -> None:
    assert len(HELPERS) > 5


def test_no_name_is_defined_in_two_helper_modules() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in HELPERS:
        for name in _defined(path):
            where[name].append(path.name)
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert not twice, f"defined in more than one helper module: {twice}"
