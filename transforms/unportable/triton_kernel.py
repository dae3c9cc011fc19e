"""NRN902: Triton imports and kernels (``@triton.jit``, ``@triton.autotune``) cannot run on Trainium."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.imports import classify_import, imported_modules, module_matches
from neuronize.transforms._helpers.messages import short
from neuronize.analysis.cuda_packages import NKI_PATH, NKI_PATH_KERNELS, KERNEL_REFERENCES

KERNEL_DECORATORS = {
    "triton.jit": "@triton.jit",
    "triton.autotune": "@triton.autotune",
    "triton.heuristics": "@triton.heuristics",
    "torch.library.triton_op": "@torch.library.triton_op",
}


class TritonKernel(Transform):
    """Finds Triton imports and Triton kernel definitions, which have no Trainium backend.

    What it does:
        Reports the first `import triton` / `from triton... import ...` of a file (and a later
        one only if it is a HARD dependency while the first was OPTIONAL), saying whether the
        import is a HARD dependency (top-level, unguarded) or OPTIONAL (inside `try/except
        ImportError`, under an `if` guard, or lazily inside a function). Reports every function
        decorated with `@triton.jit`, `@triton.autotune`, `@triton.heuristics` or
        `@torch.library.triton_op`, once per function, in any import spelling.

    Why on TorchNeuron:
        Triton compiles to GPU code; there is no Triton backend for Trainium. NKI (Neuron Kernel
        Interface) is the analogue and uses similar definition and registration patterns, but a
        kernel has to be ported by hand.

    Example:
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            ...

    Use instead:
        The stock PyTorch ops the kernel fuses (often `torch.compile(backend="neuron")` fuses them
        well enough), or an NKI kernel written with `@nki.jit` and registered as a PyTorch op with
        `torch_neuronx.nki_op("ns::name", mutates_args=...)`. Check aws-neuron/nki-library first.

    Fix safety:
        Report only: a kernel port cannot be done mechanically.

    Evidence:
        DOC-old: no Triton backend; NKI is the analogue. DOC: the NKI guide for the
        `torch_neuronx.nki_op` registration path.
    """

    id = "NRN902"
    name = "triton-kernel"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC_OLD
    section = "kernels"
    effort = "high"
    references = KERNEL_REFERENCES
    tokens = (b"triton",)
    examples = (
        Example("import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", None),
        Example("try:\n    import triton\nexcept ImportError:\n    triton = None\n", None),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._reported_import: bool | None = None  # None: none yet; else: was it HARD

    def visit_Import(self, node: cst.Import) -> None:
        self._check_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._check_import(node)

    def _check_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if not any(module_matches(m, ("triton",)) for m, _ in imported_modules(node)):
            return
        if self._reported_import is True:
            return
        dep = classify_import(self.ctx)
        if self._reported_import is False and not dep.hard:
            return
        self._reported_import = dep.hard
        self.report(
            node,
            f"`{short(node, 60, tight=True)}` ({dep.label}): Triton has no Trainium backend; "
            f"{NKI_PATH_KERNELS}, or use stock PyTorch ops",
            dependency=dep.kind,
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            spelling = KERNEL_DECORATORS.get(self.ctx.qualify(target) or "")
            if spelling is None:
                continue
            what = "Triton kernel" if spelling.startswith("@triton") else "Triton-backed custom op"
            self.report(
                decorator,
                f"{what} `{node.name.value}` (`{spelling}`): cannot run on Trainium; {NKI_PATH}, "
                "or rewrite it with stock PyTorch ops",
            )
            return
