"""A script that unconditionally imports the project's GPU-kernel code, directly or through other
modules of the project, is GPU-kernel code for the migration: its devices keep CUDA and the
report names the import that blocks Neuron."""

from __future__ import annotations

import json
from pathlib import Path, PurePath

from helpers import full_report, neuronize
from neuronize.analysis.kernel_imports import declared_extensions, extension_packages, import_graph, kernel_bound

FILES = {
    "pkg/__init__.py": b"",
    "pkg/ops/scan.py": b"import torch\nimport triton\n",
    "pkg/model.py": b"import torch\nfrom .ops.scan import run\n",
    "pkg/layers.py": b"import torch\ntry:\n    import triton\nexcept ImportError:\n    triton = None\n",
    "apps/train.py": b"import torch\nfrom pkg.model import Net\n",
    "apps/lazy.py": b"import torch\n\ndef build():\n    from pkg.model import Net\n    return Net()\n",
    "apps/plain.py": b"import torch, os\nfrom pkg import layers\n",
    "ext_user.py": b"import selective_scan_cuda\n",
    "apps/ssm.py": b"import torch\nfrom mamba_ssm import Mamba\n",
    "apps/net.py": b"import torch\nfrom pkg.model import (\n    Net,\n)\n",
    "pkg/utils/__init__.py": b"",
    "pkg/utils/torch.py": b"import triton\n",  # `import torch` elsewhere is torch, not this module
    "pkg/logging.py": b"import triton\n",
    "apps/log.py": b"import logging\nimport torch\n",  # the standard library's logging
}


def _tree(root: Path) -> list[tuple[Path, PurePath, bytes]]:
    for name, data in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return [(root / name, PurePath(name), data) for name, data in FILES.items()]


def test_unconditional_imports_of_kernel_code_are_followed_through_the_project(tmp_path):
    found = {path.relative_to(tmp_path).as_posix(): why for path, why in kernel_bound(import_graph(_tree(tmp_path))).items()}
    assert found == {
        "pkg/ops/scan.py": "imports triton",
        "pkg/utils/torch.py": "imports triton",
        "pkg/logging.py": "imports triton",
        "pkg/model.py": "imports `pkg.ops.scan`, which imports triton",
        "apps/train.py": "imports `pkg.model`, which through the project's modules imports triton",
        "ext_user.py": "imports the compiled CUDA extension `selective_scan_cuda`",
        "apps/ssm.py": "imports `mamba_ssm`, whose models run on CUDA kernels",
        "apps/net.py": "imports `pkg.model`, which through the project's modules imports triton",
    }  # an import under try:, in a function, or of a module that guards its own is not followed


def test_a_registry_that_names_kernel_modules_by_their_path_feeds_those_kernels(tmp_path):
    files = {
        "pkg/__init__.py": b"",
        "pkg/ops/scan.py": b"import torch\nimport triton\n",
        "pkg/ops/plain.py": b"import torch\n",
        "bench/registry.py": b"import importlib\nOPS = {'scan': dict(import_path='pkg.ops.scan')}\n"
                             b"def inputs(device='cuda'):\n    return importlib.import_module(OPS['scan']['import_path'])\n",
        "bench/other.py": b"import importlib\nOPS = ['pkg.ops.plain', 'torch.float16', 'model.pt']\n",
    }
    assert _kernel_bound(tmp_path, files) == {
        "pkg/ops/scan.py": "imports triton",
        "bench/registry.py": "imports `pkg.ops.scan` by name (a string), a module of the project with GPU-kernel code",
    }


def test_the_report_names_the_import_that_blocks_the_script(tmp_path):
    _tree(tmp_path)
    (tmp_path / "apps" / "train.py").write_bytes(b"import torch\nfrom pkg.model import Net\nnet = Net().cuda()\n")
    (tmp_path / "apps" / "plain.py").write_bytes(b"import torch\nfrom pkg import layers\nnet = layers.Net().cuda()\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "apps" / "train.py").read_bytes().endswith(b"net = Net().cuda()\n")
    # a script free of kernel code moves, host-aware (the neuron target keeps its CUDA hosts)
    assert (tmp_path / "apps" / "plain.py").read_bytes().endswith(
        b'net = layers.Net().to("neuron" if on_neuron() else "cuda")\n')
    full = neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode()
    assert ("not applied: this file imports GPU-kernel code (imports `pkg.model`, which through the project's "
            "modules imports triton), which has no Neuron kernels: on Neuron it fails to import, or at its first "
            "kernel; make that import optional") in " ".join(full.split())


def test_a_module_that_builds_its_extension_when_imported_is_kernel_code_for_its_importers(tmp_path):
    files = {
        "lib/__init__.py": b"",
        "lib/ext.py": b"import torch\nfrom torch.utils.cpp_extension import load\n"
                      b"kernels = load(name='kernels', sources=['kernels.cu'])\n",
        "lib/linear.py": b"import torch\nfrom lib.ext import kernels\n",
        "lib/plain.py": b"import torch\n",
    }
    assert _kernel_bound(tmp_path, files) == {
        "lib/ext.py": "builds a CUDA extension with `load`",
        "lib/linear.py": "imports `lib.ext`, which builds a CUDA extension with `load`",
    }


def test_a_device_constant_kernel_code_imports_stays_cuda(tmp_path):
    # a package re-exports the constant from the module that binds it; the script built on the
    # kernels reads it, another script's own device moves
    files = {
        "tools/__init__.py": b"from .devices import GPU, find_layers\n",
        "tools/devices.py": b"import torch\nGPU = torch.device('cuda:0')\nSPARE = torch.device('cuda')\n\ndef find_layers(m):\n    return m\n",
        "kernels/matmul.py": b"import torch\nimport triton\n",
        "quantize.py": b"import torch\nfrom kernels.matmul import run\nfrom tools import GPU, find_layers\n",
        "evaluate.py": b"import torch\nfrom tools.devices import SPARE\nnet = torch.nn.Linear(2, 2).to(SPARE)\n",
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    moved = (tmp_path / "tools" / "devices.py").read_bytes()
    assert b"GPU = torch.device('cuda:0')\n" in moved and b"SPARE = torch.device('neuron' if on_neuron() else 'cuda')" in moved
    full = neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode()
    assert ("`'cuda:0'` kept: `GPU` is imported by `quantize.py`, GPU-kernel code that runs on CUDA only; "
            "move it with that file's port") in " ".join(full.split())


def test_a_cuda_extension_the_projects_build_script_declares_is_kernel_code(tmp_path):
    files = {
        "kernels/setup.py": b'from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n'
                            b'setup(ext_modules=[CUDAExtension(\n    name="fused_ops",\n    sources=["ops.cu"])])\n',
        "model/attention.py": b"import torch\nimport fused_ops\n",
        "run.py": b"import torch\nfrom model.attention import Attention\n",
        "plain.py": b"import torch\n",
    }
    found = _kernel_bound(tmp_path, files)
    assert found == {
        "model/attention.py": "imports the project's compiled CUDA extension `fused_ops`",
        "run.py": "imports `model.attention`, which imports the project's compiled CUDA extension `fused_ops`",
    }


def test_an_extension_a_cmake_build_declares_is_kernel_code():
    setup = (b"import cmake_build_extension\nfrom setuptools import setup\n"
             b"setup(ext_modules=[cmake_build_extension.CMakeExtension(\n    name='_engine',\n    source_dir='.')])\n")
    assert declared_extensions([setup, b"import torch\n"]) == ("_engine",)


def test_the_package_a_build_script_compiles_operators_into_is_kernel_code(tmp_path):
    files = {  # the extension class chosen per build, its module named with a placeholder
        "setup.py": b"from torch.utils.cpp_extension import CppExtension, CUDAExtension\n"
                    b"Ext = CUDAExtension if cuda else CppExtension\n"
                    b"exts = [Ext(f'fastops._{op}_{kind}', [src]) for op in ops]\n",
        "fastops/__init__.py": b"import torch\n",
        "fastops/devices.py": b"import torch\ndevices = ['cpu']\n",
        "bench/run.py": b"import torch\nfrom fastops import segment_sum\n",
        "other.py": b"import torch\n",
    }
    found = _kernel_bound(tmp_path, files)
    # its operators have the kernels the build made (CPU, CUDA): whatever feeds them tensors
    # cannot take Neuron's
    assert found == {
        "fastops/__init__.py": "is part of `fastops`, the package of the project's compiled extension",
        "fastops/devices.py": "is part of `fastops`, the package of the project's compiled extension",
        "bench/run.py": "imports the project's compiled CUDA extension `fastops`",
    }


def test_an_extension_imported_only_under_a_guard_is_optional(tmp_path):
    files = {  # the compiled operators are tried, with the package's own PyTorch code as the fallback
        "setup.py": b"from torch.utils.cpp_extension import CUDAExtension\n"
                    b"setup(ext_modules=[CUDAExtension('detector._ops', ['ops.cu'])])\n",
        "detector/attention.py": b"import torch\ntry:\n    from detector import _ops\nexcept ImportError:\n"
                                 b"    _ops = None\n",
        "detector/model.py": b"import torch\nfrom detector.attention import Attention\n",
        "demo.py": b"import torch\nfrom detector.model import build\n",
    }
    assert _kernel_bound(tmp_path, files) == {}
    # imported unconditionally anywhere, the package is its operators' again
    files["detector/fast.py"] = b"import torch\nfrom detector import _ops\n"
    assert set(_kernel_bound(tmp_path, files)) == {"detector/attention.py", "detector/model.py",
                                                   "detector/fast.py", "demo.py"}


def _kernel_bound(root, files: dict[str, bytes]) -> dict[str, str]:
    graph = import_graph((root / name, PurePath(name), data) for name, data in files.items())
    return {path.relative_to(root).as_posix(): why for path, why in kernel_bound(
        graph, extension_packages(graph, declared_extensions(files.values()))).items()}


def test_a_notebook_that_imports_the_projects_kernel_modules_keeps_its_devices(tmp_path):
    _tree(tmp_path)
    cells = ["import torch\nfrom pkg.model import Net\n", "net = Net().cuda()\n"]
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": cell.splitlines(True)} for cell in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    before = (tmp_path / "demo.ipynb").read_bytes()
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "demo.ipynb").read_bytes() == before
    full = neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path / "demo.ipynb"),
                     str(tmp_path)).stdout.decode()
    assert "imports `pkg.model`, which through the project's modules imports triton" in full


def test_a_function_that_imports_kernel_code_lazily_keeps_its_devices(tmp_path):
    (tmp_path / "setup.py").write_bytes(b'from torch.utils.cpp_extension import CUDAExtension\n'
                                        b'ext = CUDAExtension(name="fast_gemm", sources=["gemm.cu"])\n')
    (tmp_path / "quant.py").write_bytes(
        b'import torch\n\n\ndef gemm(x, w):\n    import fast_gemm\n'
        b'    out = torch.empty(x.shape[0], w.shape[1], device="cuda")\n    fast_gemm.run(x, w, out)\n    return out\n\n\n'
        b'def place(x):\n    return x.to("cuda")\n')
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    fixed = (tmp_path / "quant.py").read_text()
    # the kernel's buffer stays CUDA's; the free function moves, host-aware (CUDA hosts are kept)
    assert 'device="cuda")' in fixed and 'return x.to("neuron" if on_neuron() else "cuda")\n' in fixed
    full = neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode()
    assert "function `gemm` holds GPU-kernel code (imports the project's compiled CUDA extension `fast_gemm`)" in full


def test_a_function_that_always_imports_a_cuda_only_library_keeps_its_devices(tmp_path):
    (tmp_path / "merge.py").write_bytes(
        b'import torch\n\n\ndef roundtrip(t, device=None):\n    import bitsandbytes.functional as bnb_f\n\n'
        b'    device = torch.device("cuda") if device is None else device\n'
        b'    return bnb_f.quantize_4bit(t.to(device))\n\n\n'
        b'def train(model, use_8bit):\n    if use_8bit:\n        import bitsandbytes as bnb\n'
        b'    return model.to("cuda")\n')
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    fixed = (tmp_path / "merge.py").read_text()
    assert 'torch.device("cuda") if device is None' in fixed  # the library's device
    # a conditional import leaves the rest of the function free: it moves, host-aware (CUDA hosts are kept)
    assert 'return model.to("neuron" if on_neuron() else "cuda")\n' in fixed
    full = full_report(str(tmp_path))
    assert "function `roundtrip` serves a CUDA-only library (it imports `bitsandbytes`" in full


def test_a_triton_inference_server_client_is_no_kernel_code_and_a_branch_loading_a_library_keeps_its_devices(tmp_path):
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_bytes(b"")
    (tmp_path / "utils" / "triton.py").write_bytes(b"class RemoteModel:\n    def __init__(self, url):\n"
                                                    b"        from tritonclient.http import InferenceServerClient\n"
                                                    b"        self.client = InferenceServerClient(url)\n")
    (tmp_path / "backends.py").write_bytes(
        b"import torch\n\n\ndef load(kind, path, device):\n    if kind == 'server':  # needs tritonclient\n"
        b"        from utils.triton import RemoteModel\n        return RemoteModel(path)\n"
        b"    elif kind == 'engine':\n        import tensorrt as trt\n        if device.type == 'cpu':\n"
        b"            device = torch.device('cuda:0')\n        return trt.Runtime(trt.Logger()), device\n"
        b"    return torch.jit.load(path).to('cuda')\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    fixed = (tmp_path / "backends.py").read_text()
    assert "torch.device('cuda:0')" in fixed  # TensorRT's device
    assert ".to('cuda')" not in fixed  # the TorchScript path moves: the module is no kernel code
    full = full_report(str(tmp_path))
    assert "this branch serves a CUDA-only library (it imports `tensorrt`" in full


def test_a_module_that_asserts_its_guarded_cuda_only_import_keeps_its_devices(tmp_path):
    source = (b"import torch\n\ntry:\n    from xformers.ops import memory_efficient_attention\n\n    HAVE_XF = True\n"
              b"except ImportError:\n    HAVE_XF = False\nassert HAVE_XF, 'training needs xFormers'\n\n\n"
              b"def step(batch):\n    return batch.cuda(non_blocking=True)\n")
    (tmp_path / "trainer.py").write_bytes(source)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "trainer.py").read_bytes() == source
    full = full_report(str(tmp_path))
    assert "it asserts `HAVE_XF` after importing `xformers`" in full


def test_a_scripts_entry_point_that_imports_a_cuda_only_library_still_moves(tmp_path):
    (tmp_path / "demo.py").write_bytes(
        b"import torch\n\nif __name__ == '__main__':\n    import bitsandbytes\n\n"
        b"    net = torch.nn.Linear(4, 4).to('cuda')\n    opt = bitsandbytes.optim.Adam8bit(net.parameters())\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert ".to('cuda')" not in (tmp_path / "demo.py").read_text()  # the optimizer is reported, the model moves


def test_a_script_built_on_a_kernel_package_does_not_hold_the_helpers_it_shares(tmp_path):
    # the Mamba script runs only on CUDA kernels; the checkpointer it shares with a portable
    # script is the project's own code, which moves as anywhere else
    shared = b"import torch\n\n\nclass Checkpointer:\n    def load(self, path, device='cuda'):\n        return torch.load(path, map_location=device)\n"
    files = {
        "train_mamba.py": b"import torch\nimport mamba_ssm\nfrom utils.ckpt import Checkpointer\n",
        "train_llama.py": b"import torch\nfrom utils.ckpt import Checkpointer\n",
        "utils/ckpt.py": shared,
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "utils" / "ckpt.py").read_bytes() != shared
    assert "class `Checkpointer` holds GPU-kernel code" not in full_report(str(tmp_path))


def test_a_module_only_kernel_programs_import_waits_for_them(tmp_path):
    """Timing helpers that only kernel benchmarks import (directly, or through another such helper)
    are reached by no program that runs on Neuron: their device edits wait, named in the report. A
    portable importer, or an entry point of the module's own, lets them move as anywhere else."""
    timing = (b"import torch\n\n\ndef timed(fn, *args, amp=False):\n"
              b"    with torch.autocast('cuda', enabled=amp):\n        return fn(*args)\n")
    files = {
        "pkg/__init__.py": b"from .conv import Conv\n",
        "pkg/conv.py": b"import torch\nimport fastconv_cuda\n",
        "bench/run_bench.py": b"import torch\nfrom pkg import Conv\nfrom report import timed\n",
        "bench/report.py": b"from timing import timed\n",
        "bench/timing.py": timing,
        "bench/own_entry.py": timing + b"\nif __name__ == '__main__':\n    timed(print)\n",
        "bench/run_other.py": b"import torch\nfrom pkg import Conv\nfrom own_entry import timed\n",
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "bench" / "timing.py").read_bytes() == timing
    assert (tmp_path / "bench" / "own_entry.py").read_bytes() != files["bench/own_entry.py"]
    assert ("it waits for the programs it serves (`bench/report.py`), which import GPU-kernel code"
            in full_report(str(tmp_path)))
    (tmp_path / "bench" / "portable.py").write_bytes(b"from timing import timed\ntimed(print)\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "bench" / "timing.py").read_bytes() != timing


def test_a_module_that_imports_a_library_loading_cuda_kernels_holds_its_importers(tmp_path):
    """A sibling module that imports TensorRT (or FlashAttention) unguarded does not import without
    CUDA, so neither does the script that imports it; a package's own modules are not held by
    importing that package, and a folder of the project named like it elsewhere changes nothing."""
    files = {
        "deploy/engine.py": b"import tensorrt as trt\nimport torch\n",
        "deploy/show.py": b"import torch\nfrom engine import Runner\nx = torch.zeros(1, device='cuda:0')\n",
        "deploy/guarded.py": b"try:\n    import tensorrt\nexcept ImportError:\n    tensorrt = None\n",
        "flash_attn/__init__.py": b"",
        "flash_attn/layers.py": b"import torch\nimport flash_attn\n",
        "tools/tensorrt/__init__.py": b"",  # a folder of the project named like the package elsewhere
        "tools/tensorrt/calibrate.py": b"import torch\n",
    }
    assert _kernel_bound(tmp_path, files) == {
        "deploy/engine.py": "imports `tensorrt`: NVIDIA TensorRT",
        "deploy/show.py": "imports `engine`, which imports `tensorrt`: NVIDIA TensorRT",
    }


def test_a_script_imports_the_module_below_its_own_folder(tmp_path):
    """Two projects in one repository, each with its own ``src/model.py``: a script imports the one
    below its folder (``sys.path[0]``), so only the script beside the kernel-built model is bound."""
    files = {
        "v1/src/model.py": b"import torch\nfrom torch.utils.cpp_extension import load\nops = load(name='k', sources=['k.cu'])\n",
        "v1/train.py": b"import torch\nfrom src.model import GPT\n",
        "v2/src/model.py": b"import torch\n",
        "v2/train.py": b"import torch\nfrom src.model import GPT\n",
    }
    assert set(_kernel_bound(tmp_path, files)) == {"v1/src/model.py", "v1/train.py"}


def test_a_module_imports_the_module_below_the_nearest_folder_above_it(tmp_path):
    """A module of the training folder's ``utils/`` imports ``utils.misc`` by the name its script's
    folder gives it: the training folder's copy, not the kernel package's ``utils/misc.py`` of
    another project in the repository."""
    files = {
        "kit/pkg/__init__.py": b"from torch.utils.cpp_extension import load\nops = load(name='k', sources=['k.cu'])\n",
        "kit/pkg/utils/__init__.py": b"",
        "kit/pkg/utils/misc.py": b"from pkg import ops\n",
        "train/utils/misc.py": b"import torch\n",
        "train/utils/loss.py": b"import torch\nimport utils.misc as misc\n",
        "train/train.py": b"import torch\nfrom utils.loss import dice\n",
    }
    assert not {"train/utils/loss.py", "train/train.py"} & set(_kernel_bound(tmp_path, files))


def test_the_fallback_import_of_a_prebuilt_extension_counts(tmp_path):
    """``try: import _prebuilt`` ``except ImportError: from .backend import _backend`` (which builds
    the extension at import): the fallback runs wherever no prebuilt extension is installed, so the
    wrapper and its importers are bound; an ``except`` that falls back to plain torch binds nothing."""
    files = {
        "enc/__init__.py": b"",
        "enc/backend.py": b"from torch.utils.cpp_extension import load\n_backend = load(name='enc', sources=['e.cu'])\n",
        "enc/grid.py": b"import torch\ntry:\n    import _enc as _backend\nexcept ImportError:\n    from .backend import _backend\n",
        "net.py": b"import torch\nfrom enc.grid import GridEncoder\n",
        "norm.py": b"try:\n    from apex.normalization import FusedLayerNorm as LayerNorm\nexcept ImportError:\n    from torch.nn import LayerNorm\n",
    }
    assert set(_kernel_bound(tmp_path, files)) == {"enc/backend.py", "enc/grid.py", "net.py"}


def test_an_import_after_a_semicolon_counts(tmp_path):
    """``sys.path.insert(0, "./ops"); import ops``: one line, two statements, the second an import."""
    files = {
        "ops/ops.py": b"import cupy\nimport torch\n",
        "run.py": (b"import sys\nimport torch\ntry:\n    from .ops import ops\nexcept ImportError:\n"
                   b"    sys.path.insert(0, './ops'); import ops\n"),
        "tool.py": b"import sys; print(sys.argv)\n",
    }
    assert set(_kernel_bound(tmp_path, files)) == {"ops/ops.py", "run.py"}


def test_a_script_that_picks_among_kernel_built_networks_is_bound(tmp_path):
    """``if opt.fast: from nets.fused import Net`` ``elif ...`` ``else: from nets.grid import Net``,
    each built on a compiled extension: one of them is imported whenever the script runs. A choice
    with a branch that imports plain torch code, or with no ``else``, binds nothing."""
    built = b"from torch.utils.cpp_extension import load\n_ext = load(name='k', sources=['k.cu'])\n"
    main = (b"import torch\n\nif __name__ == '__main__':\n    fast, grid = True, False\n    if fast:\n"
            b"        from nets.fused import Net\n    elif grid:\n        from nets.grid import Net\n    else:\n"
            b"        from nets.fused import Net as Slow\n        Net = Slow\n    model = Net().cuda()\n")
    files = {"nets/__init__.py": b"", "nets/fused.py": built, "nets/grid.py": b"from .fused import _ext\n",
             "nets/plain.py": b"import torch\n", "train.py": main}
    found = _kernel_bound(tmp_path, files)
    assert set(found) == {"nets/fused.py", "nets/grid.py", "train.py"}
    assert "one of `nets.fused`, `nets.grid` (one in each branch of an `if`)" in found["train.py"]
    files["train.py"] = main.replace(b"from nets.grid import Net", b"from nets.plain import Net")
    assert "train.py" not in _kernel_bound(tmp_path, files)
    files["train.py"] = main.replace(b"    else:\n        from nets.fused import Net as Slow\n        Net = Slow\n", b"")
    assert "train.py" not in _kernel_bound(tmp_path, files)


def test_an_extension_of_torch_ffi_is_bound_where_its_build_script_puts_it(tmp_path):
    """``create_extension("_ext.nms", ..., relative_to=__file__)`` (torch before 1.0) builds beside
    its build script, so ``from ._ext import nms`` there imports it; no later torch builds it."""
    files = {
        "lib/__init__.py": b"", "lib/nms/__init__.py": b"",
        "lib/nms/build.py": b"from torch.utils.ffi import create_extension\n"
                            b"ffi = create_extension(\n    '_ext.nms',\n    headers=['src/nms.h'],\n    relative_to=__file__,\n)\n",
        "lib/nms/nms_gpu.py": b"import torch\nfrom ._ext import nms\n",
        "lib/detector.py": b"import torch\nfrom lib.nms.nms_gpu import nms\n",
        "demo.py": b"import torch\nfrom lib.detector import nms\n",
        "plain.py": b"import torch\n",
    }
    found = _kernel_bound(tmp_path, files)
    assert set(found) == {"lib/nms/nms_gpu.py", "lib/detector.py", "demo.py"}
    assert "imports the project's compiled CUDA extension `_ext`" in found["lib/nms/nms_gpu.py"]


def test_a_package_whose_functions_import_its_own_extension_lazily_is_kernel_code(tmp_path):
    files = {
        "acc/__init__.py": b"from .grid import traverse\n",
        "acc/cuda/__init__.py": b"def _lazy(name):\n    def call(*args):\n        from ._backend import _C\n\n"
                                b"        return getattr(_C, name)(*args)\n\n    return call\n\n\n"
                                b"traverse_grids = _lazy(\"traverse_grids\")\n",
        "acc/cuda/_backend.py": b"from torch.utils.cpp_extension import load\n\n"
                                b"_C = load(name=\"acc_cuda\", sources=[\"grid.cu\"])\n",
        "acc/grid.py": b"import torch\nfrom . import cuda as _C\n\n\ndef traverse(rays):\n"
                       b"    return _C.traverse_grids(rays)\n",
        "examples/train.py": b"import torch\nfrom acc import traverse\n\ndevice = \"cuda:0\"\n",
    }
    found = set(_kernel_bound(tmp_path, files))
    assert {"acc/cuda/_backend.py", "acc/cuda/__init__.py", "acc/grid.py", "examples/train.py"} <= found


def test_a_method_that_imports_triton_kernels_of_its_package_is_the_authors_guard(tmp_path):
    # the quantized path runs Triton kernels; the full-precision model never imports them
    files = {
        "lm/__init__.py": b"",
        "lm/quant.py": b"import torch\nimport triton\nimport triton.language as tl\n\n\n"
                       b"def quantize_layers(model, bits):\n    return model\n",
        "lm/model.py": b"import torch\nfrom torch import nn\n\n\nclass LM(nn.Module):\n"
                       b"    def quantize(self, bits):\n        from .quant import quantize_layers\n\n"
                       b"        return quantize_layers(self, bits)\n",
        "chat.py": b"import torch\nfrom lm.model import LM\n\nmodel = LM().cuda()\n",
    }
    assert set(_kernel_bound(tmp_path, files)) == {"lm/quant.py"}


def test_a_function_that_builds_its_extension_on_first_use_is_kernel_code(tmp_path):
    # the prebuilt module first, the package's own build as the fallback, behind a cache
    files = {
        "march/__init__.py": b"from .ops import *\n",
        "march/ops.py": b"import torch\n\n_BACKEND = None\n\n\ndef backend():\n    global _BACKEND\n"
                        b"    if _BACKEND is None:\n        try:\n            import _march as _b\n"
                        b"        except ImportError:\n            from .build import _b\n        _BACKEND = _b\n"
                        b"    return _BACKEND\n\n\ndef march(rays):\n    return backend().march(rays.cuda())\n",
        "march/build.py": b"from torch.utils.cpp_extension import load\n\n_b = load(name=\"march\", sources=[\"march.cu\"])\n",
        "march/optional.py": b"def extra(flag):\n    if flag:\n        from .build import tool\n",
        "render.py": b"import torch\nfrom march import march\n\ndevice = \"cuda\"\n",
    }
    found = set(_kernel_bound(tmp_path, files))
    assert {"march/build.py", "march/ops.py", "render.py"} <= found
    assert "march/optional.py" not in found


def test_a_build_of_cpp_extensions_only_makes_no_kernel_code():
    cpu_only = (b"from torch.utils.cpp_extension import CppExtension\nextension = CppExtension\n"
                b"sources = glob.glob('csrc/**/*.cpp')\next = [extension('vision._C', sources)]\n")
    either = cpu_only.replace(b"extension = CppExtension", b"extension = CUDAExtension if cuda else CppExtension")
    assert declared_extensions([cpu_only]) == ()
    assert declared_extensions([either]) == ("vision._C",)


def test_an_import_of_a_module_of_a_package_runs_the_packages_init(tmp_path):
    # `from .comm import sync` in `moe/` runs `moe/__init__.py` first, which loads the extension
    files = {
        "moe/__init__.py": b"from .layers import MoE\nfrom .comm import sync\n",
        "moe/layers.py": b"import torch\nimport moe_cuda\n",
        "moe/comm.py": b"import torch\n\n\ndef sync():\n    torch.cuda.synchronize()\n",
        "moe/ddp.py": b"import torch\nfrom .comm import sync\n",
        "tools/models/__init__.py": b"",
        "tools/__init__.py": b"import moe\n",
        "demo.py": b"import torch\nfrom models import Net\n",  # the folder on sys.path: no `tools/__init__.py`
    }
    found = _kernel_bound(tmp_path, files)
    assert found["moe/ddp.py"] == ("imports `moe`, which through the project's modules imports the compiled CUDA "
                                   "extension `moe_cuda`")
    assert set(found) == {"moe/__init__.py", "moe/layers.py", "moe/ddp.py", "tools/__init__.py"}
    # a folder without `__init__.py` runs nothing: `model` is not the `model.py` of another folder
    files["lab/model/meta.py"] = b"import torch\n"
    files["other/model.py"] = b"import torch\nimport moe_cuda\n"
    files["eval.py"] = b"import torch\nfrom model.meta import Meta\n"
    assert "eval.py" not in _kernel_bound(tmp_path, files)
