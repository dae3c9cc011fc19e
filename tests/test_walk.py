"""``walk.visit`` runs a libcst visitor as ``node.visit`` does, over the syntax nodes only.

Rules and their helpers ask questions of a subtree through their visitors; the cheap walk must
give each visitor the same syntax nodes, in the same order, with the same pruning, as libcst's
own traversal (which also passes whitespace and punctuation, and rebuilds every node).
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from neuronize.analysis import walk

FIXTURES = sorted((Path(__file__).parent.parent / "fixtures").glob("*/*.py"))
#: the shapes whose fields libcst does not declare in source order, and friends
SHAPES = b'''\
import torch
from . import a as b
type Alias[T] = list[T]
@decorate(torch.device("cuda"))
class Model(Base, metaclass=Meta):
    def forward(self, x, /, y=1, *args, z: int = "cuda", **kw) -> int:
        try:
            print(x.cuda(), f"{x!r:>{width}} on {'cuda'}")
        except torch.cuda.OutOfMemoryError as err:
            raise
        try:
            pass
        except* (ValueError, TypeError) as group:
            pass
        match x:
            case [first, *rest] if first == "cuda":
                y = first[1:2:3]
            case {"device": d, **other}:
                pass
        return lambda a, /, b=2, *, c: (a if b else c) or (n := len(kw))
async def main(*, device="cuda:0"):
    global state
    async with torch.autocast("cuda"), other() as o:
        async for item in stream():
            await item.to(device)
'''


class _ByName(cst.CSTVisitor):
    """Records what it is shown through ``visit_<Type>`` / ``leave_<Type>``; skips the bodies of
    functions whose name starts with ``_`` and the arguments of ``print(...)``."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.seen.append(("def", node.name.value))
        return not node.name.value.startswith("_")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.seen.append(("end", original_node.name.value))

    def visit_Call(self, node: cst.Call) -> bool:
        self.seen.append(("call", cst.Module([]).code_for_node(node.func)))
        return not (isinstance(node.func, cst.Name) and node.func.value == "print")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.seen.append(("string", node.value))

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.append(("name", node.value))


class _Hooks(cst.CSTVisitor):
    """Records every syntax node through ``on_visit`` / ``on_leave``; does not enter lambdas."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if walk._is_syntax(type(node)):
            self.seen.append(("enter", type(node).__name__))
        return not isinstance(node, cst.Lambda)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if walk._is_syntax(type(original_node)):
            self.seen.append(("leave", type(original_node).__name__))


@pytest.mark.parametrize("source", [SHAPES, *FIXTURES], ids=["shapes", *(f"{p.parent.name}/{p.name}" for p in FIXTURES)])
def test_cheap_visit_shows_a_visitor_what_libcst_shows_it(source: bytes | Path) -> None:
    try:
        module = cst.parse_module(source if isinstance(source, bytes) else source.read_bytes())
    except cst.ParserSyntaxError:
        pytest.skip("not Python libcst parses")
    for kind in (_ByName, _Hooks):
        expected, actual = kind(), kind()
        module.visit(expected)
        walk.visit(module, actual)
        assert actual.seen == expected.seen, kind.__name__
