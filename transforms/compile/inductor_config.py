"""NRN303: ``torch._inductor.config.<knob> = value`` settings, which Neuron never reads."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.nodes import assign_targets

PREFIX = "torch._inductor.config"


class InductorConfig(Transform):
    """Finds TorchInductor settings (`torch._inductor.config.*`), which the Neuron backend does not use.

    What it does:
        Reports, once each, assignments to `torch._inductor.config.<knob>` (also through
        `import torch._inductor.config as inductor_config` or `from torch._inductor import config`),
        `with torch._inductor.config.patch(...):` blocks and `@torch._inductor.config.patch(...)`
        decorators, as kept: the migrated program still runs on its other hosts (the CUDA box it
        was written for, the CPU), whose compiles NRN301 leaves to Inductor, which reads them.
        Reading a setting is left. `--target cpu` and `--target accelerator` report nothing:
        Inductor compiles there by design.

    Why on TorchNeuron:
        The Neuron backend lowers Dynamo graphs through AOTAutograd and StableHLO to neuronx-cc;
        TorchInductor (and its Triton, CUDA-graph and autotuning settings) is not involved.

    Example:
        torch._inductor.config.coordinate_descent_tuning = True
        model = torch.compile(model.cuda())

    Use instead:
        torch._inductor.config.coordinate_descent_tuning = True  # Inductor's, on the other hosts
        model = torch.compile(model.to(device), backend="neuron" if on_neuron() else "inductor")

    Fix safety:
        Report-only: the setting is harmless on Neuron and still tunes the other hosts.

    Evidence:
        DOC: the Neuron backend does not use TorchInductor.
    """

    id = "NRN303"
    name = "inductor-config"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/about-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    tokens = (b"_inductor",)
    targets = per_target.ALL
    examples = (
        Example("import torch\ntorch._inductor.config.coordinate_descent_tuning = True\nmodel = build().cuda()\n"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assign(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._assign(node)

    def _kept(self, node: cst.CSTNode, what: str) -> None:
        if per_target.target(self.ctx) == per_target.NEURON:
            self.report(node, f"{what} kept for the hosts without Neuron, where Inductor still compiles and "
                        "reads it; the Neuron backend ignores it")

    def _assign(self, node: cst.Assign | cst.AugAssign) -> None:
        knobs = [t for t in assign_targets(node) if isinstance(t, cst.Attribute) and self._is_knob(t)]
        if knobs:
            self._kept(node, "Inductor setting " + ", ".join(f"`{short(t, 50)}`" for t in knobs))

    def _is_knob(self, target: cst.Attribute) -> bool:
        qualified = self.ctx.qualify(target)
        return qualified is not None and qualified.startswith(PREFIX + ".")

    def visit_With(self, node: cst.With) -> None:
        if any(self._is_patch(item.item) for item in node.items):
            self._kept(node, "`torch._inductor.config.patch(...)`")

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if self._is_patch(node.decorator):
            self._kept(node, "`@torch._inductor.config.patch(...)`")

    def _is_patch(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "patch" \
            and self.ctx.qualify(expr.func) == PREFIX + ".patch"
