"""NRN912: CUDA kernels compiled at run time with ``torch.cuda.jiterator``."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.cuda_packages import KERNEL_REFERENCES, NKI_PATH
from neuronize.transform import Evidence, Example, Safety, Transform

JITERATOR = "torch.cuda.jiterator"
#: the jiterator's builders: qualified name -> how the message names it
BUILDERS = {
    f"{JITERATOR}._create_jit_fn": "`torch.cuda.jiterator._create_jit_fn(...)`",
    f"{JITERATOR}._create_multi_output_jit_fn": "`torch.cuda.jiterator._create_multi_output_jit_fn(...)`",
}


class CudaJiterator(Transform):
    """Finds CUDA kernels compiled at run time with `torch.cuda.jiterator`.

    What it does:
        Reports calls of `torch.cuda.jiterator._create_jit_fn(...)` and
        `torch.cuda.jiterator._create_multi_output_jit_fn(...)`, in any import spelling
        (`from torch.cuda import jiterator`, `from torch.cuda.jiterator import _create_jit_fn`,
        `import torch as T`). Functions of the same name that are not PyTorch's are not reported.

    Why on TorchNeuron:
        The jiterator takes a CUDA C++ code string and compiles it with NVRTC into a CUDA
        elementwise kernel when it is first called. There is no CUDA on Trainium: the kernel
        cannot be compiled or run, and the function it returns raises on a `neuron` tensor.

    Example:
        from torch.cuda import jiterator
        code = "template <typename T> T gelu_tanh(T x) { return x * 0.5 * (1 + tanh(x)); }"
        gelu = jiterator._create_jit_fn(code)

    Use instead:
        The same elementwise math written with stock PyTorch ops (which `torch.compile(backend=
        "neuron")` fuses), or an NKI kernel written with `@nki.jit` and registered as a PyTorch op
        with `torch_neuronx.nki_op("ns::name", mutates_args=...)`.

    Fix safety:
        Report only: the C++ code string must be rewritten by hand.

    Evidence:
        DOC: custom CUDA kernels do not run on Trainium; NKI registration with
        `torch_neuronx.nki_op`.
    """

    id = "NRN912"
    name = "cuda-jiterator"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "kernels"
    effort = "high"
    references = KERNEL_REFERENCES
    tokens = (b"jiterator", b"_create_jit_fn", b"_create_multi_output_jit_fn")
    examples = (
        Example("from torch.cuda import jiterator\nf = jiterator._create_jit_fn(code)\n", None),
        Example("import torch\nf = torch.cuda.jiterator._create_multi_output_jit_fn(code, num_outputs=2)\n", None),
        Example("from mylib import _create_jit_fn\nf = _create_jit_fn(code)\n", finds=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        what = BUILDERS.get(self.ctx.qualify(node.func) or "")
        if what is not None:
            self.report(node, f"{what} compiles a CUDA C++ kernel at run time, which cannot run on "
                              f"Trainium; write it with stock PyTorch ops, or {NKI_PATH}")
