"""A `.half()` stays float16 while another module of the project still makes float16 (NRN205): the
bf16 edit is whole only where every tensor that meets the cast one follows."""

from __future__ import annotations

from pathlib import Path, PurePath

from helpers import neuronize
from neuronize.analysis.float16_sources import float16_sources, makes_float16

LOADING = (b"import torch\nfrom transformers import AutoModel\n\n\n"
           b"def load(name):\n    return AutoModel.from_pretrained(name, torch_dtype=torch.float16).cuda()\n")
DEMO = (b"import torch\nfrom app.loading import load\n\nmodel = load(\"x\")\n"
        b"images = torch.rand(1, 3, 4, 4).half().cuda()\nprint(model(images))\n")


def test_files_that_make_float16_other_than_by_a_bare_half():
    assert makes_float16("x = torch.zeros(2, dtype=torch.float16)\n")
    assert makes_float16("parser.add_argument('--fp16', action='store_true')\n")
    assert not makes_float16("model = model.half()\nx = x.to(torch.bfloat16)\n")
    # the cast NRN205 writes is no float16 of its own
    assert not makes_float16("x = x.to(torch.bfloat16 if on_neuron() else torch.float16)\n")
    found = float16_sources([(Path("/p/app/loading.py"), PurePath("app/loading.py"), LOADING),
                             (Path("/p/export_onnx.py"), PurePath("export_onnx.py"), b"m.to(torch.float16)\n"),
                             (Path("/p/demo.py"), PurePath("demo.py"), DEMO)])
    assert found == {Path("/p/app/loading.py"): "app/loading.py"}  # an exporter's float16 is its format


def test_a_half_cast_meeting_another_modules_float16_model_stays(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_bytes(b"")
    (tmp_path / "app" / "loading.py").write_bytes(LOADING)
    (tmp_path / "demo.py").write_bytes(DEMO)
    assert neuronize("fix", "--unsafe-fixes", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    fixed = (tmp_path / "demo.py").read_text()
    assert ".half().to(" in fixed  # the placement moves, the float16 cast stays
    full = " ".join(neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode().split())
    assert "app/loading.py still produces float16" in full
    # alone, the script's casts are its whole float16 path: they become bf16 on Neuron
    (tmp_path / "app" / "loading.py").write_bytes(LOADING.replace(b", torch_dtype=torch.float16", b""))
    (tmp_path / "demo.py").write_bytes(DEMO)
    assert neuronize("fix", "--unsafe-fixes", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert "torch.bfloat16 if on_neuron() else torch.float16" in (tmp_path / "demo.py").read_text()
