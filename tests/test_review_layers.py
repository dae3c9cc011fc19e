"""`fix -i` and `fix --review unsafe` never put a safe edit and an unsafe one in one question:
the safe edits (what plain `fix` writes) come first, the unsafe ones on top; answering `n` to
every question leaves exactly the file plain `fix` writes. Driven in a real pseudo-terminal, and
as a property over random mixes of adjacent lines."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import neuronize
from neuronize import api
from neuronize.analysis.context import Options
from neuronize.presenting.diff import Style
from neuronize.registry import all_rules
from neuronize.presenting.review import SafeLayer, review_layered
from test_review import _drive, _spawn

#: two safe fixes around an unsafe one, on adjacent lines (the unsafe one adds a line)
ADJACENT = b"""import torch
model = Net()
model.to("cuda")
torch.cuda.manual_seed(42)
x = torch.ones(2).to("cuda")
"""


def _notebook(*cells: bytes) -> bytes:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": c.decode().splitlines(keepends=True)} for c in cells],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=1) + "\n").encode()


def _plain_fix(tmp_path: Path, name: str, data: bytes) -> bytes:
    """What plain `neuronize fix` writes for ``data``."""
    folder = tmp_path / "plain"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    assert neuronize("fix", "--no-cache", name, cwd=folder).returncode in (0, 1)
    return (folder / name).read_bytes()


@pytest.mark.parametrize("name, data", [("t.py", ADJACENT),
                                        ("t.ipynb", _notebook(b"import torch\n", ADJACENT))])
@pytest.mark.parametrize("mode", [["--review", "unsafe"], ["-i", "--unsafe-fixes"]])
def test_pty_all_n_after_the_safe_edits_is_plain_fix(tmp_path, name, data, mode):
    (tmp_path / name).write_bytes(data)
    expected = _plain_fix(tmp_path, name, data)
    shown: list[str] = []
    safe_first = mode[0] == "-i"  # -i asks about the safe edits too: accept them, refuse the rest

    def answer(file, index, total, before):  # type: ignore[no-untyped-def]
        shown.append(before)
        return "y" if safe_first and "[unsafe]" not in before else "n"

    given = _drive(_spawn(["fix", "--no-cache", *mode, name], tmp_path), answer)
    assert given, "the unsafe edit is asked about"
    for text in shown:  # no question holds both classes
        hunk = text.rsplit(f"{name}: hunk", 1)[-1]
        assert not ("[NRN101 safe]" in hunk and "[NRN112 unsafe]" in hunk), hunk
    assert (tmp_path / name).read_bytes() == expected
    # both safe edits, host-aware (CUDA hosts keep CUDA), around the refused seed call
    code = expected.decode()
    if name.endswith(".ipynb"):
        code = "".join("".join(cell["source"]) for cell in json.loads(code)["cells"])
    moved = '.to("neuron" if on_neuron() else "cuda")'
    assert (f'model{moved}\ntorch.cuda.manual_seed(42)\nx = torch.ones(2){moved}\n') in code
    assert "def on_neuron() -> bool:" in code and "torch.neuron" not in code


def test_pty_a_split_notebook_hunk_keeps_classes_reasons_and_counts(tmp_path):
    data = _notebook(b"import torch\n", b'model.to("cuda")\ny = 1\nx = torch.ones(2).to("cuda")\n'
                     b"torch.cuda.manual_seed(42)\n")
    (tmp_path / "n.ipynb").write_bytes(data)
    answers = iter(["s", "y", "y", "y"])
    shown: list[str] = []
    child = _spawn(["fix", "--no-cache", "-i", "--unsafe-fixes", "n.ipynb"], tmp_path)
    given = _drive(child, lambda file, index, total, before: shown.append(before) or next(answers))
    tail = child.before or ""
    assert [g[2] for g in given] == ["s", "y", "y", "y"]
    parts = shown[1:3]  # the two parts of the split safe hunk
    for part in parts:
        hunk = part.rsplit("n.ipynb: hunk", 1)[-1]
        assert "[safe]" in hunk and "[NRN101 safe] `.to()`" in hunk, hunk
    assert "[unsafe]" in shown[3] and "[NRN112 unsafe]" in shown[3]
    assert "1 file reviewed, 1 written: 3 fixes applied, 0 skipped" in tail, tail
    assert "NRN101" not in tail.split("wrote")[-1], tail  # nothing written is listed as left
    out = json.loads((tmp_path / "n.ipynb").read_text())
    assert "torch.neuron.manual_seed(42)" in "".join(out["cells"][1]["source"])


SAFE_LINES = ['model.to("cuda")', 'x = torch.ones(2).to("cuda")', "torch.cuda.synchronize()"]
UNSAFE_LINES = ["torch.cuda.manual_seed(42)", "batch = batch.cuda(3)"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([*SAFE_LINES, *UNSAFE_LINES, "y = 1"]), min_size=1, max_size=6),
       st.booleans())
def test_all_n_is_safe_only_for_any_mix_of_adjacent_edits(tmp_path_factory, lines, notebook):
    folder = tmp_path_factory.mktemp("mix")
    code = ("import torch\n" + "".join(f"{line}\n" for line in lines)).encode()
    name = "m.ipynb" if notebook else "m.py"
    (folder / name).write_bytes(_notebook(code) if notebook else code)
    path = [str(folder / name)]
    [unsafe] = api.analyse_paths(path, all_rules(), Options(unsafe_fixes=True), jobs=1, cache=False).files
    [safe] = api.analyse_paths(path, all_rules(), Options(), jobs=1, cache=False).files
    if unsafe.result.output is None:
        return
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return "n"

    outcome = review_layered(name, unsafe.source, unsafe.result.output, unsafe.result.findings,
                             SafeLayer(safe.result.output, safe.result.findings), ask=ask,
                             say=lambda s: None, style=Style(), prompt_for=lambda h: h.safety.value != "safe")
    written = outcome.output if outcome.output is not None else unsafe.source
    assert written == (safe.result.output if safe.result.output is not None else unsafe.source)
    assert len(asked) <= sum(line in UNSAFE_LINES for line in lines)
    assert outcome.findings is None or all(f.applied == (f.safety.value == "safe" and f.applied)
                                           for f in outcome.findings)
