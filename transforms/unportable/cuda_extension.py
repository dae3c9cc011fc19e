"""NRN901: custom CUDA C++ extensions (``CUDAExtension``, ``load``/``load_inline`` with CUDA sources,
``torch.utils.ffi.create_extension``)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument, keyword
from neuronize.transforms._helpers.literals import string_value, switches_off
from neuronize.transforms._helpers.names import inside_call_to
from neuronize.analysis.cuda_packages import NKI_PATH, NKI_PATH_KERNELS, KERNEL_REFERENCES

CPP_EXT = "torch.utils.cpp_extension"
CUDA_EXTENSION = f"{CPP_EXT}.CUDAExtension"
LOAD = f"{CPP_EXT}.load"
LOAD_INLINE = f"{CPP_EXT}.load_inline"
#: torch's extension builder before 1.0, removed since: no torch TorchNeuron runs on builds it
FFI = "torch.utils.ffi.create_extension"
BUILDERS = frozenset({CUDA_EXTENSION, LOAD, LOAD_INLINE, FFI})
CUDA_SUFFIXES = (".cu", ".cuh")


def _is_cuda_source(value: str) -> bool:
    """A path-like string (no spaces: not a message) ending in `.cu` / `.cuh`."""
    value = value.strip()
    return value.endswith(CUDA_SUFFIXES) and not any(c.isspace() for c in value)


def _has_cuda_source(node: cst.CSTNode) -> bool:
    """A literal `.cu` / `.cuh` path anywhere in ``node`` (a list, a join, a glob pattern)."""
    stack = [node]
    while stack:
        current = stack.pop()
        value = string_value(current)
        if value is not None and _is_cuda_source(value):
            return True
        stack.extend(current.children)
    return False


class CudaExtension(Transform):
    """Finds custom CUDA C++ extensions built or loaded with `torch.utils.cpp_extension`.

    What it does:
        Reports `CUDAExtension(...)` (in a `setup.py`), `load(...)` whose sources contain a
        `.cu`/`.cuh` file or that passes `extra_cuda_cflags=` / `with_cuda=True`, `load_inline(...)`
        with `cuda_sources=` or `with_cuda=True`, and `torch.utils.ffi.create_extension(...)` (torch
        before 1.0, removed since), in any import spelling. Also reports a literal
        path ending in `.cu` / `.cuh` used as a list element or call argument elsewhere (a sources
        list kept in a variable, a glob pattern). Pure C++ extensions (`CppExtension`, `load` of
        `.cpp` files only) run on the CPU and are not reported.

    Why on TorchNeuron:
        There is no CUDA on Trainium: the kernels of a CUDA extension cannot be compiled or run,
        and the ops they register have no Neuron implementation.

    Example:
        from torch.utils.cpp_extension import load
        ext = load(name="fused_ops", sources=["fused.cpp", "fused_kernel.cu"])

    Use instead:
        Stock PyTorch ops for what the kernel fuses, or an NKI kernel written with `@nki.jit` and
        registered as a PyTorch op with `torch_neuronx.nki_op("ns::name", mutates_args=...)`
        (a typed signature is required; add a backward with `register_autograd()`). It then works
        in eager mode and under `torch.compile(backend="neuron")`. Check aws-neuron/nki-library
        for an existing kernel first.

    Fix safety:
        Report only: a kernel port cannot be done mechanically.

    Evidence:
        DOC: custom CUDA extensions; NKI registration with `torch_neuronx.nki_op`.
    """

    id = "NRN901"
    name = "cuda-extension"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "kernels"
    effort = "high"
    references = KERNEL_REFERENCES
    tokens = (b"cpp_extension", b".cu\"", b".cu'", b".cuh\"", b".cuh'", b"CUDAExtension", b"create_extension")
    examples = (
        Example(
            "from torch.utils.cpp_extension import CUDAExtension\n"
            "ext = CUDAExtension('fused', ['fused.cpp', 'fused_kernel.cu'])\n",
            None,
        ),
        Example(
            "from torch.utils import cpp_extension\n"
            "mod = cpp_extension.load_inline('k', cpp_sources=[src], cuda_sources=[cu_src])\n",
            None,
        ),
        Example("from torch.utils.ffi import create_extension\nffi = create_extension('_ext.nms', headers=headers, "
                "sources=sources, relative_to=__file__, with_cuda=True)\n", None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified not in BUILDERS:
            return
        name_arg = argument(node, "name", 0)
        name = string_value(name_arg.value) if name_arg is not None else None
        label = f" (extension `{name}`)" if name else ""
        with_cuda = keyword(node, "with_cuda")
        cuda_on = with_cuda is not None and not switches_off(with_cuda.value)
        if qualified == FFI:
            self.report(node, f"`create_extension(...)`{label} builds with `torch.utils.ffi`, which torch removed in "
                              f"1.0: no torch that TorchNeuron runs on builds it; {NKI_PATH}, or replace it with "
                              "stock PyTorch ops")
        elif qualified == CUDA_EXTENSION:
            self.report(node, f"`CUDAExtension(...)`{label} builds CUDA kernels, which cannot run on "
                              f"Trainium; {NKI_PATH}, or replace it with stock PyTorch ops")
        elif qualified == LOAD:
            sources = argument(node, "sources", 1)
            cuda = cuda_on or keyword(node, "extra_cuda_cflags") is not None or (
                sources is not None and _has_cuda_source(sources.value))
            if cuda:
                self.report(node, f"`load(...)`{label} JIT-compiles a CUDA extension, which cannot run on "
                                  f"Trainium; {NKI_PATH}, or replace it with stock PyTorch ops")
        else:
            cuda_sources = argument(node, "cuda_sources", 2)
            if cuda_on or (cuda_sources is not None and not switches_off(cuda_sources.value)):
                self.report(node, f"`load_inline(...)`{label} compiles inline CUDA code, which cannot run "
                                  f"on Trainium; {NKI_PATH}, or replace it with stock PyTorch ops")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        parent = self.ctx.parent
        if not isinstance(parent, (cst.Element, cst.Arg)):
            return
        value = string_value(node)
        if value is None or not _is_cuda_source(value):
            return
        if inside_call_to(self.ctx, BUILDERS):
            return  # the builder call itself is reported
        self.report(node, f"CUDA source `{value.strip()}`: CUDA kernels cannot run on Trainium; "
                          f"{NKI_PATH_KERNELS}")
