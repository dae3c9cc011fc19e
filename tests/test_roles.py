"""Roles of code (neuronize/analysis/roles.py): where CUDA is the point, a fix becomes a report."""

from __future__ import annotations

import libcst as cst
import pytest

from neuronize.analysis.context import FileContext, collect_imports
from neuronize.analysis.engine import run_source
from neuronize.registry import rule_by_code
from neuronize.analysis.roles import (
    CUDA_AT_IMPORT, CUDA_FLAG, CUDA_GRAPH, CUDA_HELPERS, CUDA_NAMED, FAKE, INDUCTOR, KERNEL, KERNEL_IMPORTER, LIBRARY, OTHER_HOST, TEST,
    is_test_path,
)
from neuronize.types import Options


def _ctx(source: str, path: str = "lib/module.py") -> FileContext:
    module = cst.parse_module(source)
    return FileContext(module=module, names=collect_imports(module), path=path, source=source.encode())


def _file_role(source: str, path: str = "lib/module.py") -> tuple[str, str] | None:
    role = _ctx(source, path).roles.file_role
    return None if role is None else (role.kind, role.reason)


def _role_at(source: str, marker: str, path: str = "lib/module.py") -> str | None:
    """The role kind at the first node whose code is ``marker`` (found by a plain walk)."""
    ctx = _ctx(source, path)
    found: list[str | None] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            ctx.stack.append(node)
            if not found and isinstance(node, cst.BaseExpression) and ctx.module.code_for_node(node) == marker:
                role = ctx.role()
                found.append(None if role is None else role.kind)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            ctx.stack.pop()

    ctx.module.visit(Finder())
    assert found, f"{marker!r} not in the source"
    return found[0]


@pytest.mark.parametrize("source, reason", [
    ("import triton\n", "imports triton"),
    ("import triton.language as tl\n", "imports triton"),
    ("from tilelang import language as T\n", "imports tilelang"),
    ("import cutlass.cute as cute\n", "imports cutlass"),
    ("from cuda.cute import nvgpu\n", "imports cuda.cute"),
    ("import helion\n", "imports helion"),
    ("from numba import cuda\n", "imports numba.cuda"),
    ("import cupy as cp\n", "imports cupy"),
    ("from mamba_ssm.ops.triton.ssd import scan\n", "imports the kernel module `mamba_ssm.ops.triton.ssd`"),
    ("def f():\n    import selective_scan_cuda\n", "imports the compiled CUDA extension `selective_scan_cuda`"),
    ("from torch.utils.cpp_extension import load\next = load('k', ['k.cu'])\n",
     "builds a CUDA extension with `load`"),
])
def test_kernel_files(source: str, reason: str) -> None:
    assert _file_role(source) == (KERNEL, reason)


@pytest.mark.parametrize("source", [
    "import torch\nx = torch.cuda.is_available()\n",
    "import numba\n",  # numba's CPU JIT is no GPU kernel
    "from utils import is_cuda\n",  # a name ending in _cuda, not an extension module
    "from torch.utils.cpp_extension import CUDAExtension\n",  # a build script, not a load
    "import torch._inductor.config as ic\nic.coordinate_descent_tuning = True\n",
])
def test_ordinary_files_have_no_role(source: str) -> None:
    assert _file_role(source) is None


@pytest.mark.parametrize("path, expected", [
    ("tests/unit/helpers.py", True), ("test/x.py", True), ("pkg/test_ops.py", True),
    ("pkg/ops_test.py", True), ("conftest.py", True), ("test_ops.before.py", True),
    ("pkg/testing.py", False), ("contest.py", False), ("pkg/latest_model.py", False),
])
def test_test_paths(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


@pytest.mark.parametrize("source, expected", [
    ("import torch\n\n\ndef test_add():\n    assert torch.ones(1) + 1 == 2\n", True),
    ("import unittest\n\n\nclass Ops(unittest.TestCase):\n    pass\n", True),
    ("class TestOps:\n    def check(self):\n        pass\n", True),
    # a command-line script that only carries the name: it parses options when imported
    ("import argparse\nparser = argparse.ArgumentParser()\nopt = parser.parse_args()\n", False),
])
def test_a_test_named_file_is_test_code_when_it_holds_tests(source: str, expected: bool) -> None:
    assert is_test_path("tools/test_on_image.py", source.encode()) is expected
    assert is_test_path("tests/on_image.py", source.encode())  # under tests/: always


def test_test_file_and_cuda_gated_module() -> None:
    assert _file_role("x = 1\n", "tests/test_a.py") == (TEST, "a test file")
    gated = "import pytest, torch\npytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='')\n"
    assert _file_role(gated) == (TEST, "its `pytestmark` needs CUDA")
    skipped = ("import pytest, torch\nif not torch.cuda.is_available():\n"
               "    pytest.skip('cuda', allow_module_level=True)\n")
    assert _file_role(skipped) == (TEST, "it is skipped unless CUDA is available")


@pytest.mark.parametrize("decorator", [
    "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')",
    "@unittest.skipUnless(torch.cuda.is_available(), 'cuda')",
    "@requires_cuda",
    "@pytest.mark.gpu",
])
def test_cuda_gated_functions(decorator: str) -> None:
    source = f"import torch\n{decorator}\ndef check():\n    return torch.ones(1, device='cuda')\n" \
             "def other():\n    return torch.ones(1, device='cuda')\n"
    assert _role_at(source, "torch.ones(1, device='cuda')") == TEST
    assert _role_at(source.replace(decorator, "@functools.cache"), "torch.ones(1, device='cuda')") is None


def test_early_skip_gates_a_function() -> None:
    source = ("import torch\ndef check(self):\n    if not torch.cuda.is_available():\n"
              "        self.skipTest('cuda')\n    return torch.ones(1, device='cuda')\n")
    assert _role_at(source, "torch.ones(1, device='cuda')") == TEST
    # an early return guards settings as well as tests: not enough to call the function a test
    settings = source.replace("self.skipTest('cuda')", "return None")
    assert _role_at(settings, "torch.ones(1, device='cuda')") is None


def test_inductor_roles() -> None:
    assert _file_role("from torch._inductor.compile_fx import compile_fx\n")[0] == INDUCTOR  # type: ignore[index]
    patched = "import torch._inductor.config as ic\nwith ic.patch(max_autotune=True):\n    pass\n"
    assert _file_role(patched) is None  # a training script tuning its compile
    branch = ("import torch\nif backend == 'inductor':\n    torch._inductor.config.freezing = True\n"
              "torch._inductor.config.max_autotune = True\n")
    assert _role_at(branch, "torch._inductor.config.freezing") == INDUCTOR
    assert _role_at(branch, "torch._inductor.config.max_autotune") is None


def test_cuda_graph_manager_class() -> None:
    source = ("import torch\nclass Runner:\n    def make(self):\n        self.s = torch.cuda.Stream()\n"
              "    def capture(self):\n        with torch.cuda.graph(self.g):\n            pass\n"
              "def elsewhere():\n    return torch.cuda.Stream()\n")
    assert _role_at(source, "torch.cuda.Stream()") == CUDA_GRAPH
    assert _role_at(source.replace("self.s = torch.cuda.Stream()", "pass"), "torch.cuda.Stream()") is None
    named = "import torch\ndef wrap_with_cuda_graph(fn):\n    return torch.cuda.is_available()\n"
    assert _role_at(named, "torch.cuda.is_available()") == CUDA_GRAPH


@pytest.mark.parametrize("header", ["def to_cuda(x):", "def _set_cuda_rng_state(x):", "def cuda(x):",
                                    "class CUDA_Accelerator:\n  def sync(x):", "class CudaHelper:\n  def sync(x):"])
def test_code_named_for_cuda_keeps_cuda(header: str) -> None:
    source = f"import torch\n{header}\n    return torch.zeros(1, device='cuda')\n"
    assert _role_at(source, "torch.zeros(1, device='cuda')") == CUDA_NAMED


@pytest.mark.parametrize("header", ["def accumulate(x):", "def recuda(x):", "def barracuda(x):"])
def test_a_name_that_only_contains_the_letters_is_not_named_for_cuda(header: str) -> None:
    source = f"import torch\n{header}\n    return torch.zeros(1, device='cuda')\n"
    assert _role_at(source, "torch.zeros(1, device='cuda')") is None


def test_the_branch_of_a_setting_the_user_chose_cuda_with_keeps_cuda() -> None:
    source = ("import torch\nclass Aligner:\n  def run(self, x):\n    if self.cuda:\n"
              "      x = x.to('cuda')\n    else:\n      x = x.to('cpu')\n    return x\n")
    assert _role_at(source, "x.to('cuda')") == CUDA_FLAG
    assert _role_at(source.replace("self.cuda", "args.use_gpu"), "x.to('cuda')") == CUDA_FLAG
    # a check kept in a local is followed by NRN110, not taken as the user's choice
    assert _role_at(source.replace("self.cuda", "use_cuda"), "x.to('cuda')") is None
    # a parameter of that name with a boolean default is the caller's choice where its branch does
    # CUDA's work; where the branch only moves values to the GPU, that move is the function's default
    # placement, which a host-aware move keeps for CUDA
    chosen = source.replace("def run(self, x)", "def run(self, x, use_cuda=True)").replace("self.cuda", "use_cuda")
    assert _role_at(chosen, "x.to('cuda')") is None
    packing = chosen.replace("x = x.to('cuda')", "x = pack_int4(x.to('cuda'))")
    assert _role_at(packing, "x.to('cuda')") == CUDA_FLAG


def test_a_vendored_cuda_only_library_keeps_cuda() -> None:
    from neuronize.analysis.cuda_packages import PACKAGES
    from neuronize.analysis.roles import VENDORED_LIBRARIES

    assert VENDORED_LIBRARIES <= set(PACKAGES)
    source = "import torch\nx = torch.zeros(1).cuda()\n"
    assert _file_role(source, "benchmark/third_party/DeepSpeed/deepspeed/runtime/p2p.py") == (
        LIBRARY, "it is part of a vendored `deepspeed`, DeepSpeed engine/ZeRO, built on CUDA kernels and NCCL")
    assert _file_role(source, "third_party/DeepSpeed/benchmarks/bench.py") is None  # a script using it
    assert _file_role(source, "compression/dependencies/AutoGPTQ/auto_gptq/modeling/_const.py")[0] == LIBRARY
    assert _file_role(source, "deepspeed/runtime/p2p.py") is None  # its own repository: the project
    assert _file_role(source, "vendor/kernels/ops.py") is None  # a common word is not the `kernels` hub


@pytest.mark.parametrize(("path", "expected"), [
    ("engine/backends/cuda/graph_runner.py", (CUDA_NAMED, "it sits in the folder `cuda/`, CUDA's implementation")),
    ("engine/kernels/CUDA/fill.py", (CUDA_NAMED, "it sits in the folder `cuda/`, CUDA's implementation")),
    ("engine/backends/ascend/ops.py", (OTHER_HOST, "it sits in the folder `ascend/`")),
    ("engine/backends/dlinfer/cuda/ops.py", (CUDA_NAMED, "it sits in the folder `cuda/`, CUDA's implementation")),
    ("engine/backends/default/ops.py", None),
    ("engine/cuda_utils.py", None),  # a file's own name is judged by what it defines, not here
])
def test_a_host_implementation_folder_keeps_its_host(path: str, expected: tuple[str, str] | None) -> None:
    """A project that implements one thing per host in folders named for them (``backends/cuda/``,
    ``backends/ascend/``) chooses the folder by host: each keeps its own devices."""
    assert _file_role("import torch\nx = torch.zeros(1, device=\"cuda\")\n", path) == expected


def test_fake_tensor_block() -> None:
    source = ("import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
              "with FakeTensorMode():\n    a = torch.empty(2, device='cuda')\nb = torch.empty(3, device='cuda')\n")
    assert _role_at(source, "torch.empty(2, device='cuda')") == FAKE
    assert _role_at(source, "torch.empty(3, device='cuda')") is None


def test_tpu_code_needs_no_neuron_tie_and_a_tpu_sign() -> None:
    guarded = "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n"
    assert _ctx(guarded).roles.tpu is not None
    assert _ctx("import torch_xla\nimport torch_neuronx  # tpu\n").roles.tpu is None
    assert _ctx("import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n").roles.tpu is None


def test_a_fix_in_a_role_becomes_a_report_with_the_reason() -> None:
    rule = rule_by_code("NRN101")
    source = b"import triton\nimport torch\nx = torch.ones(1, device='cuda')\n"
    result = run_source(source, (rule,), Options(unsafe_fixes=True), path="ops/k.py")
    assert result.output is None or result.output == source
    assert [f.fixable for f in result.findings] == [False]
    assert "not applied: this file holds GPU-kernel code (imports triton)" in result.findings[0].text


def test_a_module_importing_a_kernel_loading_package_unguarded_is_held() -> None:
    """A package whose import loads its CUDA kernels (FlashAttention, Transformer Engine, TensorRT),
    imported at the top of a module, keeps that module off every host without CUDA; imported under
    `try:` or in a function it is the author's own choice and holds nothing."""
    for line in ("from flash_attn import flash_attn_func", "import flash_attn_interface",
                 "import transformer_engine.pytorch as te", "import tensorrt as trt"):
        role = _file_role(f"import torch\n{line}\nx = torch.ones(1, device='cuda')\n", "bench/run.py")
        assert role is not None and role[0] == KERNEL_IMPORTER, line
        assert role[1].startswith(f"`{line.split()[1].split('.')[0]}`: ")
    assert _file_role("import torch\ntry:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n") is None
    assert _file_role("import torch\ndef attend(q):\n    import flash_attn\n    return q\n") is None
    # the package's own modules are not held by their own imports
    assert _file_role("import torch\nfrom flash_attn.ops import fused\n", "flash_attn/layers/rotary.py") is None


def test_a_harness_built_on_another_packages_cuda_helpers_keeps_cuda() -> None:
    """A benchmark that times or measures through a dependency's functions named for CUDA work
    feeds its devices to them; a question whether CUDA is there serves a choice, and the project's
    own helpers are read where they are defined."""
    for line in ("from perf_tools.utils import cuda_memory_usage", "from perf_tools import benchmark_cuda_function as bench"):
        role = _file_role(f"import torch\n{line}\ndevice = torch.device('cuda')\n", "bench/run.py")
        assert role is not None and role[0] == CUDA_HELPERS, line
    source = "import torch\nfrom perf_tools.utils import cuda_memory_usage\nx = torch.ones(1, device='cuda')\n"
    result = run_source(source.encode(), (rule_by_code("NRN101"),), Options(unsafe_fixes=True), path="bench/run.py")
    assert "another package's CUDA helpers (`cuda_memory_usage` from `perf_tools.utils`)" in result.findings[0].text
    for line in ("from transformers.utils import is_torch_cuda_available", "from torch.cuda import memory_usage",
                 "from perf_tools import CUDATimer", "from perf_tools import use_cuda_graphs"):
        assert _file_role(f"import torch\n{line}\n", "bench/run.py") is None, line
    own = FileContext(module=cst.parse_module("from utils import to_cuda\n"), names=collect_imports(
        cst.parse_module("from utils import to_cuda\n")), path="bench/run.py", source=b"from utils import to_cuda\n",
        options=Options(own_packages=("utils",)))
    assert own.roles.file_role is None


def test_own_package_is_no_dependency() -> None:
    rule = rule_by_code("NRN903")
    source = b"from mamba_ssm.ops import scan\nimport flash_attn\n"
    inside = run_source(source, (rule,), Options(), path="repo/mamba_ssm/modules/block.py")
    assert [f.message.split("`")[1] for f in inside.findings] == ["import flash_attn"]
    outside = run_source(source, (rule,), Options(), path="app/train.py")
    assert len(outside.findings) == 2


def test_inductor_compile_modules() -> None:
    """A module importing a project's precompile / compile-backend module is part of that pipeline."""
    entry = "import torch\nfrom proj.graph.precompile import run\n"
    assert _file_role(entry) == (INDUCTOR, "imports the compile module `proj.graph.precompile`")
    assert _file_role("import torch\nfrom proj.graph.jit_backend import build\n")[0] == INDUCTOR  # type: ignore[index]
    assert _file_role("import torch\nfrom proj.graph.inductor_passes import fuse\n")[0] == INDUCTOR  # type: ignore[index]
    assert _file_role("import torch\nfrom proj.graph.compiler import build\n") is None


def test_cuda_only_library_arguments() -> None:
    source = ("import torch\nimport xformers.ops\nimport bitsandbytes as bnb\n"
              "y = xformers.ops.memory_efficient_attention(torch.ones(1, device='cuda'))\n"
              "layer = bnb.nn.Linear8bitLt(2, 2, device=torch.cuda.current_device())\n"
              "z = torch.ones(2, device='cuda')\n")
    assert _role_at(source, "torch.ones(1, device='cuda')") == LIBRARY
    assert _role_at(source, "torch.cuda.current_device()") == LIBRARY
    assert _role_at(source, "torch.ones(2, device='cuda')") is None
    # the project's own package is not a dependency
    own = "import torch\nimport xformers.ops\ny = xformers.ops.f(torch.ones(1, device='cuda'))\n"
    assert _role_at(own, "torch.ones(1, device='cuda')", "xformers/ops/x.py") is None


def test_serving_engine_wrapper() -> None:
    source = ("import torch\nfrom vllm import LLM\nclass Gen:\n    def make(self):\n        self.llm = LLM('m')\n"
              "    def flush(self):\n        torch.cuda.empty_cache()\n"
              "def elsewhere():\n    torch.cuda.empty_cache()\n")
    assert _role_at(source, "torch.cuda.empty_cache()") == LIBRARY
    assert _role_at(source.replace("self.llm = LLM('m')", "pass"), "torch.cuda.empty_cache()") is None
    assert _role_at(source, "torch.cuda.empty_cache()", "vllm/worker.py") is None  # the engine's own code


def test_module_built_on_a_kernel_package() -> None:
    """Benchmarks and converters of a model made of CUDA kernels: the file as a whole."""
    bench = "import torch\nfrom mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel\ndevice = 'cuda'\n"
    assert _file_role(bench, "benchmarks/bench.py") == (KERNEL, "imports `mamba_ssm`, whose models run on CUDA kernels")
    assert _file_role(bench, "mamba_ssm/utils/generation.py") is None  # the package's own code
    guarded = "import torch\ntry:\n    import mamba_ssm\nexcept ImportError:\n    mamba_ssm = None\n"
    assert _file_role(guarded) is None  # a fallback exists


def test_a_function_named_for_inductor_is_not_a_compile_module() -> None:
    assert _file_role("import torch\nfrom proj.distributed.compile import maybe_regional_inductor\n") is None


def test_a_value_only_handed_to_cuda_only_apis() -> None:
    source = ("import torch\nimport xformers.ops as xops\n"
              "def check():\n    q = torch.randn(2, device='cuda')\n    return xops.memory_efficient_attention(q, q, q)\n"
              "def cap():\n    d = torch.device('cuda')\n    return torch.cuda.get_device_capability(d)\n"
              "def train(m):\n    e = torch.device('cuda')\n    torch.cuda.get_device_properties(e)\n    return m.to(e)\n")
    assert _role_at(source, "torch.randn(2, device='cuda')") == LIBRARY
    assert _role_at(source, "torch.device('cuda')") == LIBRARY
    # a device that also places the model is migrated as usual
    assert _role_at(source.replace("d = torch.device('cuda')", "d = 0"), "torch.device('cuda')") is None


def test_a_subclass_of_a_cuda_only_library_class() -> None:
    source = ("import torch\nimport bitsandbytes as bnb\nclass Fused(bnb.nn.Linear8bitLt):\n"
              "    def __init__(self):\n        super().__init__(2, 2, device=torch.cuda.current_device())\n")
    assert _role_at(source, "torch.cuda.current_device()") == LIBRARY


def test_a_module_that_probes_the_cuda_device_when_imported_keeps_its_devices() -> None:
    """A module storing a CUDA device probe at its top level does not import without CUDA: what it
    defines (kernel utilities gated on the arch) serves that device. A guarded probe, a probe in a
    function and a script's probe (the program's own first step, reported where it stands) are not
    this."""
    for probe in ("torch.cuda.get_device_capability()", "torch.cuda.get_device_capability()[0]",
                  "torch.cuda.get_device_properties(0).major"):
        source = f"import torch\n_arch = {probe}\ndef pack(w):\n    return w.cuda()\n"
        role = _file_role(source)
        assert role is not None and role[0] == CUDA_AT_IMPORT and probe in role[1], probe
        result = run_source(source.encode(), (rule_by_code("NRN102"),), Options(), path="lib/module.py")
        assert not result.changed and "asks the CUDA device about itself when it is imported" in result.findings[0].text
    for source in ("import torch\nif torch.cuda.is_available():\n    _arch = torch.cuda.get_device_capability()\n",
                   "import torch\ndef arch():\n    return torch.cuda.get_device_capability()\n",
                   "import torch\n_arch = torch.cuda.get_device_capability()\nprint(_arch)\n"):
        assert _file_role(source) is None, source
