"""The engine adds imports with libcst's ``AddImportsVisitor`` entering the module's own simple
statements only (``neuronize.writing.imports._top_level``): the result must be what the whole visitor writes."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from neuronize.writing.imports import _top_level

#: every eighth fixture (the whole visitor is slow: about ten parses a file)
FIXTURES = sorted((Path(__file__).parent.parent / "fixtures").glob("*/*.py"))[::8]
#: (module, obj, asname): a plain import, names from a module the file may import already, an
#: alias, a future import
REQUESTS = [
    [("torch_neuronx", None, None)],
    [("torch", "accelerator", None), ("torch.amp", "autocast", None)],
    [("os", None, None), ("torch.nn", "functional", "F"), ("__future__", "annotations", None)],
    [("torch", None, "T"), ("typing", "Any", None)],
]
TRICKY = [
    b'"""Doc."""\nfrom torch import nn\nimport os\n\n\ndef f():\n    from torch import cuda\n    return cuda\n',
    b'__strict__ = True\nimport torch\nclass A:\n    import typing\n',
    b'# comment\n\nif True:\n    import torch\nx = 1\n',
    b'',
    b'from torch import *\nfrom typing import (\n    List,  # why\n)\n',
]


@pytest.mark.parametrize("source", [*TRICKY, *FIXTURES],
                         ids=[*(f"tricky{i}" for i in range(len(TRICKY))), *(f"{p.parent.name}/{p.name}" for p in FIXTURES)])
def test_top_level_adder_writes_what_the_whole_visitor_writes(source: bytes | Path) -> None:
    try:
        module = cst.parse_module(source if isinstance(source, bytes) else source.read_bytes())
    except cst.ParserSyntaxError:
        pytest.skip("not Python libcst parses")
    for requests in REQUESTS:
        whole, top = CodemodContext(), CodemodContext()
        for module_name, obj, asname in requests:
            AddImportsVisitor.add_needed_import(whole, module_name, obj, asname)
            AddImportsVisitor.add_needed_import(top, module_name, obj, asname)
        expected = AddImportsVisitor(whole).transform_module(module).code
        assert module.visit(_top_level(AddImportsVisitor)(top)).code == expected, requests


def test_a_name_a_later_top_level_import_binds_is_not_imported_again() -> None:
    """A module that sets ``sys.path`` before some of its imports binds those names too."""
    from neuronize.types import ImportRequest
    from neuronize.writing.imports import apply_imports

    source = ('import sys\n\nsys.path.append("..")\n\nimport torch\nfrom typing import List, Optional\n\n\n'
              'def f(device: Optional[str] = None) -> None:\n    pass\n')
    module = cst.parse_module(source)
    assert apply_imports(module, [ImportRequest("typing", "Optional"), ImportRequest("torch")]).code == source
    assert "from typing import Any\n" in apply_imports(module, [ImportRequest("typing", "Any")]).code
