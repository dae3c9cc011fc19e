"""A module that calls operators a compiled extension registers (``torch.ops.<namespace>.<op>``)
is GPU-kernel code: those operators have no Neuron kernel, so its devices stay CUDA's, reported.
Torch's own namespaces, and one the project defines in Python, leave a module free."""

from __future__ import annotations

from helpers import full_report, neuronize
from neuronize.analysis.custom_ops import compiled_namespace, defined_namespaces

BINDING = (b"import torch\n\n\ndef target_device(t):\n    if not torch.cuda.is_available():\n"
           b"        raise RuntimeError('these ops need CUDA')\n    return torch.device('cuda')\n\n\n"
           b"def render(points):\n    return torch.ops.splat_kernels.render(points.to(target_device(points)))\n")
PYTHON_OP = (b"import torch\n\n\n@torch.library.custom_op('mylib::scale', mutates_args=())\n"
             b"def scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n")
CALLER = b"import torch\nimport ops_def  # noqa: F401\n\n\ndef run(x):\n    return torch.ops.mylib.scale(x.to('cuda'))\n"


def test_a_namespace_is_compiled_unless_torch_or_the_project_defines_it() -> None:
    assert compiled_namespace(BINDING) == "splat_kernels"
    assert compiled_namespace(b"import torch\ny = torch.ops.aten.add(x, x)\n") is None
    assert compiled_namespace(PYTHON_OP + b"y = torch.ops.mylib.scale(x)\n") is None
    assert defined_namespaces([PYTHON_OP, b"lib = torch.library.Library('other', 'DEF')\n"]) == {"mylib", "other"}
    assert compiled_namespace(CALLER, defined_namespaces([PYTHON_OP])) is None


def test_a_module_calling_compiled_operators_keeps_its_devices(tmp_path) -> None:
    (tmp_path / "binding.py").write_bytes(BINDING)
    (tmp_path / "ops_def.py").write_bytes(PYTHON_OP)
    (tmp_path / "caller.py").write_bytes(CALLER)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "binding.py").read_bytes() == BINDING
    assert (tmp_path / "caller.py").read_bytes() != CALLER  # the project's Python operator moves
    report = full_report(str(tmp_path))
    assert "calls `torch.ops.splat_kernels`, operators a compiled extension registers" in report


def test_the_importers_of_a_compiled_operator_module_and_its_device_helper_keep_their_devices(tmp_path) -> None:
    package = tmp_path / "pkg"
    (package / "common").mkdir(parents=True)
    (package / "__init__.py").write_bytes(b"")
    (package / "common" / "__init__.py").write_bytes(b"from .devices import (\n    target_device,\n)\n")
    helper = (b"import torch\n\n\ndef target_device(t):\n    if not torch.cuda.is_available():\n"
              b"        raise RuntimeError('these ops need CUDA')\n    return torch.device('cuda')\n")
    (package / "common" / "devices.py").write_bytes(helper)
    (package / "ops.py").write_bytes(b"import torch\n\nfrom .common import (\n    target_device,\n)\n\n\n"
                                     b"def render(points):\n"
                                     b"    return torch.ops.splat_kernels.render(points.to(target_device(points)))\n")
    api = b"import torch\n\nfrom pkg.ops import render\n\n\ndef grid(device='cuda'):\n    return render(torch.zeros(4, device=device))\n"
    (package / "api.py").write_bytes(api)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (package / "common" / "devices.py").read_bytes() == helper
    assert (package / "api.py").read_bytes() == api
    report = full_report(str(tmp_path))
    assert "function `target_device` holds GPU-kernel code (GPU-kernel code imports it: `pkg/ops.py`)" in report
    assert "imports `pkg.ops`, which calls `torch.ops.splat_kernels`" in report
