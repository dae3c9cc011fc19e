"""An engine that keeps one implementation per vendor side by side (``backends/cuda/`` beside
``backends/ascend/``) and picks one by device is given Neuron by an implementation of its own, not
by rewriting its lines: its files are reported, not edited. Code of the same repository outside the
engine moves as usual, and an engine that already has a Neuron implementation is none of this."""

from __future__ import annotations

from pathlib import PurePosixPath

from helpers import full_report, neuronize
from neuronize.analysis.vendor_engines import engine_of, vendor_engines

LAYER = b"import torch\n\n\ndef make_weight(size, device=None):\n    if device is None:\n        device = 'cuda'\n" \
        b"    return torch.empty(size, device=device)\n"
TOOL = b"import torch\n\n\ndef calibrate(model):\n    return model.cuda()\n"


def _paths(*names: str) -> list[PurePosixPath]:
    return [PurePosixPath("/repo", name) for name in names]


def test_the_folder_around_cuda_and_another_vendor_is_an_engine() -> None:
    engines = vendor_engines(_paths("pkg/engine/backends/cuda/attn.py", "pkg/engine/backends/npu.py",
                                    "pkg/engine/nn/norm.py", "pkg/tools/calibrate.py"))
    assert list(engines) == [PurePosixPath("/repo/pkg/engine")]
    assert "`backends/cuda`, `backends/npu`" in engines[PurePosixPath("/repo/pkg/engine")]
    assert engine_of(PurePosixPath("/repo/pkg/engine/nn/norm.py"), engines) is not None
    assert engine_of(PurePosixPath("/repo/pkg/tools/calibrate.py"), engines) is None


def test_no_engine_without_another_vendor_or_with_neuron_already() -> None:
    assert not vendor_engines(_paths("ops/cuda/a.py", "ops/cpu/b.py", "ops/mps.py"))
    assert not vendor_engines(_paths("platforms/cuda.py", "platforms/rocm.py", "platforms/neuron.py"))


def test_engine_files_are_reported_and_the_rest_of_the_repository_moves(tmp_path) -> None:
    for name, text in (("pkg/engine/backends/cuda/ops.py", b"def op(x):\n    return x\n"),
                       ("pkg/engine/backends/ascend/ops.py", b"def op(x):\n    return x\n"),
                       ("pkg/engine/nn/norm.py", LAYER), ("pkg/tools/calibrate.py", TOOL)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "pkg/engine/nn/norm.py").read_bytes() == LAYER
    assert (tmp_path / "pkg/tools/calibrate.py").read_bytes() != TOOL
    report = full_report(str(tmp_path))
    assert "part of an engine that picks among its own implementations by device" in report
    assert "`backends/ascend`, `backends/cuda`" not in report and "`backends/cuda`, `backends/ascend`" in report
