"""The engine's modules import each other along one chain, without a cycle:
types <- context <- transform <- engine <- api <- cli; and the core imports no rule.

Read statically from the source (every import counts, also one inside a function or under
``TYPE_CHECKING``: a cycle hidden in a lazy import is still a cycle), so the test costs no
interpreter start per module. ``neuronize.transforms`` (the rules and their helpers) sits above
``transform`` and ``context``: the registry alone imports it, to discover the rules; what the
core and the rules both need lives in the core, and the rules import it from there.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Container
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "neuronize"
#: the rules and their helpers, installed as ``neuronize.transforms``
RULES = PACKAGE.parent / "transforms"
CHAIN = ("neuronize.types", "neuronize.analysis.context", "neuronize.transform", "neuronize.analysis.engine",
         "neuronize.api", "neuronize.cli")


def _module_name(path: Path, root: Path = PACKAGE.parent, prefix: tuple[str, ...] = ()) -> str:
    parts = (*prefix, *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: Container[str]) -> set[str]:
    """The modules ``path`` imports, wherever the import stands; ``from a import b`` is ``a.b``
    when that is one of ``modules`` (a module), else ``a`` (a name of the package ``a``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                         else node.module for a in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {t for t in _imports(path, modules) if t in modules and t != name}
            for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_import_cycle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_cycle_detection_works() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_types_is_a_leaf() -> None:
    assert _graph()["neuronize.types"] == set()


def test_modules_import_only_down_the_chain() -> None:
    graph = _graph()
    for low, module in enumerate(CHAIN):
        above = set(CHAIN[low + 1:])
        assert not _reaches(graph, module) & above, f"{module} imports a module above it in the chain"
        if low:
            assert CHAIN[low - 1] in _reaches(graph, module), f"{module} does not build on {CHAIN[low - 1]}"


def test_types_imports_alone() -> None:
    code = ("import sys, neuronize.types; "
            "print(sorted(m for m in sys.modules if m.startswith('neuronize')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "['neuronize', 'neuronize.types']"


def test_the_core_imports_no_rule_and_no_rule_helper() -> None:
    rules = {_module_name(p, RULES.parent, ("neuronize",)) for p in RULES.rglob("*.py")}
    known = set(_modules()) | rules
    offenders = {name: sorted(t for t in _imports(path, known)
                              if t == "neuronize.transforms" or t.startswith("neuronize.transforms."))
                 for name, path in _modules().items() if name != "neuronize.registry"}
    assert not {name: found for name, found in offenders.items() if found}, \
        "the core imports the rules (move what both need into the core; the registry discovers rules)"


def test_only_the_command_line_imports_click() -> None:
    """The core runs as a library: the commands sit on top of it, never under it."""
    graph = _graph()
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        if name in ("neuronize.cli", "neuronize.__main__"):
            continue
        assert "neuronize.cli" not in graph[name], f"{name} imports neuronize.cli"
        for node in ast.walk(ast.parse(path.read_bytes())):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [m for m in modules if m.split(".")[0] == "click"], f"{name} imports click"
