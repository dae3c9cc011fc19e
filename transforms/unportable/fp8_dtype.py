"""NRN907: FP8 dtypes (``torch.float8_e4m3fn``...) and ``torch._scaled_mm``."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform

FP8_DTYPES = frozenset(
    f"torch.{name}"
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float4_e2m1fn_x2")
)
SCALED_MM = "torch._scaled_mm"
WHY = ("FP8 is not established on TorchNeuron (pre-beta report: no `torch._scaled_mm`; OCP FP8/MX "
       "kernels are Trn3-only)")
INSTEAD = "use bf16 (`torch.bfloat16`) or verify FP8 on your instance and release"


class Fp8Dtype(Transform):
    """Finds FP8 dtypes and `torch._scaled_mm`, whose Neuron support is not established.

    What it does:
        Reports every reference to `torch.float8_e4m3fn`, `torch.float8_e5m2`, the `fnuz`
        variants, `torch.float8_e8m0fnu` and `torch.float4_e2m1fn_x2` (also after
        `from torch import float8_e4m3fn`), and every use of `torch._scaled_mm`. It does not
        report `torch._scaled_grouped_mm` / `torch._grouped_mm`, which are supported MoE ops.
        TorchAO and Transformer Engine imports are reported by NRN903.

    Why on TorchNeuron:
        A third-party migration report found no `torch._scaled_mm` in the pre-beta drop, with
        OCP FP8/MX kernels only on Trn3; TorchAO (the usual FP8 training recipe) was still being
        evaluated. FP8 code paths are therefore a manual decision.

    Example:
        w8 = w.to(torch.float8_e4m3fn)
        y = torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)

    Use instead:
        A bf16 matmul (`x.to(torch.bfloat16) @ w.to(torch.bfloat16).t()`), or keep FP8 only after
        testing it on your Trainium generation and release.

    Fix safety:
        Report only: dropping FP8 changes memory use and numerics.

    Evidence:
        3P: pre-beta migration report; DOC-old: TorchAO being evaluated.
    """

    id = "NRN907"
    name = "fp8-dtype"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "unsupported"
    effort = "high"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",)
    tokens = (b"float8_", b"float4_e2m1", b"_scaled_mm")
    examples = (
        Example("import torch\nw8 = w.to(torch.float8_e4m3fn)\n", None),
        Example("import torch as T\ny = T._scaled_mm(a, b, scale_a=sa, scale_b=sb)\n", None),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value.startswith(("float8_", "float4_", "_scaled_mm")):
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if not node.value.startswith(("float8_", "float4_", "_scaled_mm")):
            return
        if self.ctx.is_name_reference(node):
            self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        qualified = self.ctx.qualify(node)
        if qualified in FP8_DTYPES:
            self.report(node, f"`{qualified}`: {WHY}; {INSTEAD}")
        elif qualified == SCALED_MM:
            self.report(node, f"`torch._scaled_mm`: {WHY}; use a bf16 matmul (`torch.matmul` in bf16)")
