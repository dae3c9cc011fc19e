"""NRN908: ``memory_format=torch.channels_last`` (rejected by TorchNeuron)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.messages import short

FORMATS = frozenset({"torch.channels_last", "torch.channels_last_3d"})


class ChannelsLast(Transform):
    """Finds `torch.channels_last` / `torch.channels_last_3d` memory formats.

    What it does:
        Reports every use of `torch.channels_last` and `torch.channels_last_3d`
        (`.to(memory_format=...)`, `.contiguous(memory_format=...)`, factory `memory_format=`
        arguments, stored settings), in any import spelling. A query such as
        `x.is_contiguous(memory_format=torch.channels_last)` is left alone, and so is a CPU
        pipeline: a file that imports Intel Extension for PyTorch and never names CUDA.

    Why on TorchNeuron:
        A third-party report on the pre-beta drop found channels-last rejected: TorchNeuron
        supports only the contiguous and preserve memory formats. On GPUs channels-last is a
        cuDNN/Tensor Core speed-up; it has no known benefit on Trainium.

    Example:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)

    Use instead:
        Drop the `memory_format=` argument (the default contiguous format):
        `x = x.contiguous()`; delete a `model.to(memory_format=...)` line.

    Fix safety:
        Report only: the reference marks this 3P, so nothing is removed silently.

    Evidence:
        3P: pre-beta migration report.
    """

    id = "NRN908"
    name = "channels-last"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "unsupported"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"channels_last",)
    examples = (
        Example("import torch\nmodel = model.to(memory_format=torch.channels_last)\n", None),
        Example("from torch import channels_last\nx = x.contiguous(memory_format=channels_last)\n", None),
    )

    def _cpu_pipeline(self) -> bool:
        """An Intel Extension for PyTorch file that never names CUDA: a CPU pipeline, where
        channels-last is the CPU's fast layout and nothing moves to Trainium."""
        return self.ctx.names.imports_module("intel_extension_for_pytorch") and b"cuda" not in self.ctx.source

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value.startswith("channels_last"):
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if not node.value.startswith("channels_last"):
            return
        if self.ctx.is_name_reference(node):
            self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        qualified = self.ctx.qualify(node)
        if qualified not in FORMATS or self._cpu_pipeline():
            return
        parent = self.ctx.parent
        call = None
        if isinstance(parent, cst.Arg):
            for anc in self.ctx.ancestors():
                if isinstance(anc, cst.Call):
                    call = anc
                    break
        if (call is not None and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "is_contiguous"):
            return  # a query, not a conversion
        keyword = parent.keyword if isinstance(parent, cst.Arg) else None
        why = "TorchNeuron supports only contiguous/preserve memory formats (pre-beta report)"
        if keyword is not None and keyword.value == "memory_format":
            self.report(parent, f"`memory_format={short(node, 60, tight=True)}`: {why}; drop the `memory_format=` argument")  # type: ignore[arg-type]
        else:
            self.report(node, f"`{short(node, 60, tight=True)}`: {why}; use the default contiguous format")
