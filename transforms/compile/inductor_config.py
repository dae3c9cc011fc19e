"""NRN303: ``torch._inductor.config.<knob> = value`` settings, which Neuron never reads."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.transforms._helpers import hosts, per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.imports import removals_for
from neuronize.transforms._helpers.messages import short
from neuronize.analysis.subtrees import has_call
from neuronize.transforms._helpers.nodes import assign_targets, unwrap_with

PREFIX = "torch._inductor.config"


#: symmetric memory (async tensor parallelism): CUDA-only
_SYMMETRIC_MEMORY = re.compile(r"_symmetric_memory|\bsymm_mem")

class InductorConfig(Transform):
    """Finds TorchInductor settings (`torch._inductor.config.*`), which the Neuron backend does not use.

    What it does:
        Deletes assignments to `torch._inductor.config.<knob>` (also through
        `import torch._inductor.config as inductor_config` or `from torch._inductor import config`),
        keeping comments and inserting `pass` where a block would be empty, and drops the import
        once nothing uses it. Unwraps `with torch._inductor.config.patch(...):` blocks.
        Reported, not changed: an assignment that also sets something else, a value computed
        by a call, and `@torch._inductor.config.patch(...)` decorators. Reading a setting is left.
        This is for a file whose compiles move to Neuron outright (a script that hard-codes CUDA,
        where NRN301 writes `backend="neuron"`). A file that also runs without Neuron (a CPU
        path: a `torch.cuda.is_available()` check, a `"cpu"` device, a device parameter, or no
        CUDA at all), whose compiles NRN301 makes host-aware, keeps every setting, and each is
        reported once as kept: Inductor still compiles there (the CUDA box keeps its tuning), and
        the Neuron backend ignores them. A hard-coded script whose only host-aware compile is a
        decorator (built at import time, so made host-aware only for the module to import
        without torch-neuronx) loses its settings like any other: its code runs on Neuron only.
        `--target cpu` and `--target accelerator` keep every setting and report nothing: Inductor
        compiles there (CPU, CUDA), and the Neuron backend ignores the settings.

    Why on TorchNeuron:
        The Neuron backend lowers Dynamo graphs through AOTAutograd and StableHLO to neuronx-cc;
        TorchInductor (and its Triton, CUDA-graph and autotuning settings) is not involved.

    Example:
        torch._inductor.config.coordinate_descent_tuning = True
        torch._inductor.config.triton.unique_kernel_names = True
        model = torch.compile(model.cuda())

    Use instead:
        model = torch.compile(model.to("neuron"), backend="neuron", dynamic=False)

    Fix safety:
        Safe when the assigned value is a plain expression. Unsafe when it contains a call (the
        call no longer runs).

    Evidence:
        DOC: the Neuron backend does not use TorchInductor.
    """

    id = "NRN303"
    name = "inductor-config"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/about-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    tokens = (b"_inductor",)
    #: ``--target cpu`` / ``accelerator`` keep the settings (Inductor compiles there; the Neuron
    #: backend ignores them): nothing is reported
    targets = per_target.ALL
    examples = (
        Example(
            "import torch\ntorch._inductor.config.coordinate_descent_tuning = True\nmodel = build().cuda()\n",
            "import torch\nmodel = build().cuda()\n",
        ),
        Example(
            "import torch\nfrom torch._inductor import config\n\nif fast:\n    config.max_autotune = True\n"
            "x = x.cuda()\n",
            "import torch\nx = x.cuda()\n",
        ),
        Example(  # a CPU path: the other hosts still compile with Inductor
            'import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n'
            'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assign(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._assign(node)

    def _kept(self, node: cst.CSTNode, what: str) -> bool:
        """The settings stay where the file's compiles keep hosts other than Neuron
        (:func:`hosts.compile_keeps_other_hosts`): Inductor still compiles there. On the neuron
        target that is said once per setting (as NRN350 says of the cuDNN flags it keeps); the
        other targets compile with Inductor by design and say nothing."""
        if not hosts.compile_keeps_other_hosts(self.ctx):
            return False
        if per_target.target(self.ctx) == per_target.NEURON:
            self.report(node, f"{what} kept: this file also runs without Neuron (it has a CPU path), where "
                        "Inductor still compiles and reads it; the Neuron backend ignores it")
        return True

    def _assign(self, node: cst.Assign | cst.AugAssign) -> None:
        targets = assign_targets(node)
        knobs = [t for t in targets if isinstance(t, cst.Attribute) and self._is_knob(t)]
        if not knobs:
            return
        names = ", ".join(f"`{short(t, 50)}`" for t in knobs)
        if self._kept(node, f"Inductor setting {names}"):
            return
        if len(knobs) != len(targets):
            self.report(node, f"{names}: Inductor setting, unused by the Neuron backend; this assignment also "
                        "sets something else, so remove the Inductor part by hand")
            return
        bound = self._bound_to_neighbours(node, knobs)
        if bound:
            self.report(node, f"{names}: Inductor setting, unused by the Neuron backend; kept: {bound}, so "
                        "deleting it alone would leave that code wrong; review the block by hand")
            return
        side_effects = has_call(node.value)
        message = f"Inductor setting {names} removed: the Neuron backend does not use TorchInductor"
        if side_effects:
            message += f" (the value `{short(node.value, 50)}` is no longer computed)"
        self.remove(node, message, safety=Safety.UNSAFE if side_effects else None,
                    imports=removals_for(self.ctx, [PREFIX]))

    def _bound_to_neighbours(self, node: cst.CSTNode, knobs: list[cst.Attribute]) -> str | None:
        """Why the setting belongs to the statements around it (same block), if it does: one of them
        names it (a log line saying it was set), or they enable symmetric memory (async tensor
        parallelism, a CUDA-only feature the setting is part of)."""
        line = self.ctx.parent
        block = self.ctx.stack[-3] if len(self.ctx.stack) > 2 else None
        siblings = getattr(block, "body", None)
        if not isinstance(siblings, (list, tuple)) or line not in siblings:
            return None
        names = {k.attr.value for k in knobs}
        for other in siblings:
            if other is line or isinstance(other, (cst.FunctionDef, cst.ClassDef)):
                continue
            code = self.ctx.module.code_for_node(other)
            named = next((n for n in names if n in code), None)
            if named is not None:
                return f"the code next to it refers to `{named}`"
            if _SYMMETRIC_MEMORY.search(code):
                return "the code next to it enables symmetric memory (CUDA-only), which the setting goes with"
        return None

    def _is_knob(self, target: cst.Attribute) -> bool:
        qualified = self.ctx.qualify(target)
        return qualified is not None and qualified.startswith(PREFIX + ".")

    def visit_With(self, node: cst.With) -> None:
        drop = [item for item in node.items if self._is_patch(item.item)]
        if not drop or self._kept(node, "`torch._inductor.config.patch(...)`"):
            return
        result = unwrap_with(node, drop)
        if isinstance(result, str):
            self.report(node, "`torch._inductor.config.patch(...)` has no effect on Neuron: unwrap it by hand: "
                        f"{result}")
            return
        inner = ", ".join(short(item.item, 50) for item in drop)
        shown = ", ".join(f"`{short(item.item, 50)}`" for item in drop)
        if isinstance(result, cst.FlattenSentinel):
            message = f"`with {inner}:` removed, its body kept"
        else:
            message = f"{shown} removed from the `with` statement"
        self.fix(node, result, f"{message}: the Neuron backend does not use TorchInductor",
                 imports=removals_for(self.ctx, [PREFIX]))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if self._is_patch(node.decorator) and not self._kept(node, "`@torch._inductor.config.patch(...)`"):
            self.report(node, "`@torch._inductor.config.patch(...)` has no effect on Neuron: remove the decorator")

    def _is_patch(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "patch":
            return False
        return self.ctx.qualify(func) == PREFIX + ".patch"
