"""Our cheap locator agrees with libcst's PositionProvider on the nodes rules report."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from neuronize.positions import locate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KINDS = (cst.Call, cst.Attribute, cst.Name, cst.SimpleString, cst.FormattedString,
         cst.SimpleStatementLine, cst.With, cst.Arg, cst.Decorator, cst.Assign, cst.Expr,
         cst.Comparison, cst.IfExp, cst.ImportFrom, cst.Import, cst.FunctionDef, cst.If)


def _sources():
    yield "inline", (
        "import torch\n\n# leading comment\n@torch.compile(\n    mode='max-autotune',  # c\n)\n"
        "def f(x):\n\tif x.is_cuda:\n\t\ty = (x\n\t\t     .cuda())\n\treturn torch.device('cuda' if ok else 'cpu')\n"
        "s = '''multi\nline''' ; t = f'cuda:{r}'\r\nu = 1 + \\\n    torch.cuda.synchronize()\n"
    )
    for path in sorted(FIXTURES.glob("*/*.before.py"))[:40]:
        yield path.name, path.read_bytes().decode("utf-8", "replace")


@pytest.mark.parametrize("name,source", list(_sources()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_locate_matches_position_provider(name, source):
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("not valid Python")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in expected if isinstance(n, KINDS)]
    spans = locate(module, nodes)
    for node in nodes:
        want = expected[node]
        got = spans[id(node)]
        assert (got.line, got.column) == (want.start.line, want.start.column + 1), (
            type(node).__name__, module.code_for_node(node)[:60])
