"""NRN910: code paths gated on the CUDA compute capability (``get_device_capability() >= (8, 0)``)."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.nodes import target_names

PROBES = frozenset({
    "torch.cuda.get_device_capability",
    "torch.cuda.get_device_properties",
})
PROPERTY_FIELDS = frozenset({"major", "minor", "multi_processor_count"})


class CapabilityProbe(Transform):
    """Finds conditions that gate a code path on the CUDA compute capability.

    What it does:
        Reports comparisons that test the result of `torch.cuda.get_device_capability()` or the
        `.major` / `.minor` / `.multi_processor_count` of `torch.cuda.get_device_properties(...)`,
        directly (`if torch.cuda.get_device_capability()[0] >= 8:`) or through a name assigned
        from the probe earlier in the file (`major, minor = torch.cuda.get_device_capability()`
        then `if major >= 8:`; `props = torch.cuda.get_device_properties(0)` then
        `props.major >= 9`). One finding per condition (the whole `a and b` test). The probe call
        itself is reported by the torch.cuda runtime rules (NRN11x), not here.

    Why on TorchNeuron:
        Neuron devices have no CUDA compute capability; a platform layer reports the probe missing
        or returning `None`. The gated branch is usually a FlashAttention, FP8, Triton or TF32 path
        that cannot run on Trainium, while the other branch is the portable one.

    Example:
        if torch.cuda.get_device_capability()[0] >= 8:
            attn = flash_attention
        else:
            attn = F.scaled_dot_product_attention

    Use instead:
        Decide the Neuron path by hand: usually keep the portable branch
        (`F.scaled_dot_product_attention`, bf16) and drop the capability test, or branch on
        `device.type == "neuron"`.

    Fix safety:
        Report only: which branch is right on Neuron depends on what it guards.

    Evidence:
        3P: no `get_device_capability` equivalent; INF: predicates that select CUDA-only paths must
        not be rewritten blindly.
    """

    id = "NRN910"
    name = "capability-probe"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "unsupported"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"get_device_capability", b"get_device_properties")
    examples = (
        Example("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    use_flash = True\n", None),
        Example(
            "import torch\nmajor, minor = torch.cuda.get_device_capability()\n"
            "use_bf16 = major >= 8\n",
            None,
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._probe_names: set[str] = set()  # names holding a capability tuple or element
        self._props_names: set[str] = set()  # names holding a device-properties object
        self._reported: set[int] = set()
        self._active = ctx.names.imports_module("torch")  # no torch import: no probe to find

    # -- names assigned from a probe --------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._active:
            return
        kind = self._probe_kind(node.value)
        if kind is None:
            return
        names = self._probe_names if kind == "capability" else self._props_names
        for target in node.targets:
            names.update(n for n in target_names(target.target) if "." not in n)  # plain names only

    def _probe_kind(self, value: cst.BaseExpression) -> str | None:
        """"capability" for a capability tuple/element/field, "props" for a properties object."""
        inner = value
        while isinstance(inner, (cst.Subscript, cst.Attribute)) and not self._is_probe_call(inner):
            inner = inner.value
        if not self._is_probe_call(inner):
            return None
        assert isinstance(inner, cst.Call)
        qualified = self.ctx.qualify(inner.func)
        if qualified == "torch.cuda.get_device_properties" and inner is value:
            return "props"
        if qualified == "torch.cuda.get_device_properties":
            return "capability" if isinstance(value, cst.Attribute) and value.attr.value in PROPERTY_FIELDS else None
        return "capability"

    def _is_probe_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and self.ctx.qualify(node.func) in PROBES

    # -- gates --------------------------------------------------------------------------------
    def visit_Comparison(self, node: cst.Comparison) -> None:
        if not self._active or not self._mentions_probe(node):
            return
        gate: cst.CSTNode = node
        for anc in self.ctx.ancestors():
            if isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)):
                gate = anc
            else:
                break
        if id(gate) in self._reported:
            return
        self._reported.add(id(gate))
        self.report(
            gate,
            f"`{short(gate, 60, tight=True)}` gates code on the CUDA compute capability or SM count, which "
            "Neuron devices do not have; choose the Neuron path by hand (usually the portable SDPA/bf16 branch)",
        )

    def _mentions_probe(self, node: cst.Comparison) -> bool:
        parts = [node.left, *(c.comparator for c in node.comparisons)]
        return any(self._is_probe_expr(p) for p in parts)

    def _is_probe_expr(self, expr: cst.BaseExpression) -> bool:
        # strip subscripts / attribute fields: `cap[0]`, `props.major`, `probe()[0]`
        while True:
            if isinstance(expr, cst.Name):
                return expr.value in self._probe_names
            if self._is_probe_call(expr):
                assert isinstance(expr, cst.Call)
                return self.ctx.qualify(expr.func) == "torch.cuda.get_device_capability"
            if isinstance(expr, cst.Attribute):
                if expr.attr.value in PROPERTY_FIELDS:
                    base = expr.value
                    if isinstance(base, cst.Name) and base.value in self._props_names:
                        return True
                    if self._is_probe_call(base):
                        return True
                if self.ctx.qualify(expr) is not None:
                    return False
                expr = expr.value
            elif isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, (cst.Tuple, cst.List)):
                return any(self._is_probe_expr(el.value) for el in expr.elements)
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in (
                    "tuple", "int", "float", "str"):
                if not expr.args:
                    return False
                expr = expr.args[0].value
            else:
                return False

