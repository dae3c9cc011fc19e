"""Our cheap locator agrees with libcst's PositionProvider on the nodes rules report."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from neuronize.analysis.positions import locate_in_code

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
    spans, _ = locate_in_code(module, nodes)
    for node in nodes:
        want = expected[node]
        got = spans[id(node)]
        assert (got.line, got.column) == (want.start.line, want.start.column + 1), (
            type(node).__name__, module.code_for_node(node)[:60])


# -- after `fix`: positions in the file as written ------------------------------------------------
#: `fix --unsafe-fixes` keeps lines 2-3 for CUDA hosts, inserts the 11-line `on_neuron` helper above
#: line 3 and lays line 4's host-aware `.cuda()` move out over three lines, before the leftover
MOVES = (b"import torch\nfrom torch.backends import cudnn\ncudnn.benchmark = True\n"
         b"x = torch.zeros(2).cuda(); y = torch.cuda.max_memory_allocated()\n")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
def test_after_fix_findings_point_into_the_file_as_written(tmp_path, fmt):
    from helpers import neuronize

    (tmp_path / "m.py").write_bytes(MOVES)
    proc = neuronize("fix", "--unsafe-fixes", "--output-format", fmt, "m.py", cwd=tmp_path)
    written = (tmp_path / "m.py").read_text().splitlines()
    assert written[16].index("torch.cuda.max_memory_allocated") + 1 == 8
    out = proc.stdout.decode()
    expected = {
        "text": "m.py:17:8 NRN113 [report-only]",
        "json": '"line": 17,\n      "column": 8,',
        "sarif": '"startLine": 17,\n                  "startColumn": 8,',
        "github": "file=m.py,line=17,col=8,",
        "markdown": "| [m.py:17](m.py#L17) | NRN113",
    }[fmt]
    assert expected in out, out


def test_position_map_follows_kept_characters():
    from neuronize.analysis.positions import position_map

    before = b"a = 1\nb = x.cuda() + f(y)\nc = 3\n"
    after = b"b = x.to('neuron') + f(y)\nc = 3\n"
    moved = position_map(before, after)
    assert moved(2, 5) == (1, 5)  # before the edit
    assert moved(2, 16) == (1, 22)  # `f(y)`, after it
    assert moved(3, 1) == (2, 1)
    assert moved(1, 3) == (1, 1)  # a deleted line: the start of what follows


def test_line_ops_rebuild_the_new_lines_and_stay_cheap_on_a_large_file():
    import random

    from neuronize.analysis.positions import line_ops, position_map

    rng = random.Random(1)
    for _ in range(300):
        old = [rng.choice([b"a\n", b"b\n", b"c\n", b"\n"]) for _ in range(rng.randint(0, 30))]
        new = list(old)
        for _ in range(rng.randint(0, 5)):
            k = rng.randint(0, len(new))
            kind = rng.choice("idr")
            if kind == "i":
                new[k:k] = [rng.choice([b"x\n", b"a\n"])]
            elif new:
                new[min(k, len(new) - 1):min(k, len(new) - 1) + (kind == "d")] = [] if kind == "d" else [b"y\n"]
        rebuilt, position = [], (0, 0)
        for tag, i1, i2, j1, j2 in line_ops(old, new):
            assert (i1, j1) == position
            assert tag != "equal" or old[i1:i2] == new[j1:j2]
            rebuilt += new[j1:j2]
            position = (i2, j2)
        assert position == (len(old), len(new)) and rebuilt == new
    # a generated module of unique lines, an edit every hundred lines: a linear walk
    block = b"".join(b"w_%d = [0.1, 0.2]\n" % i for i in range(99)) + b"x = t.cuda()\n"
    before = block * 200
    moved = position_map(before, b"import torch\n" + before.replace(b".cuda()", b'.to("neuron")'))
    assert moved(19_950, 5) == (19_951, 5) and moved(20_000, 7) == (20_001, 7)
