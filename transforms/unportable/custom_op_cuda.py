"""NRN904: ``torch.library`` custom ops registered for CUDA only."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.literals import string_value, string_values
from neuronize.transforms._helpers.messages import short
from neuronize.analysis.cuda_packages import CUDA_ONLY_ATEN_OPS, KERNEL_REFERENCES

CUSTOM_OP = "torch.library.custom_op"
REGISTER_KERNEL = "torch.library.register_kernel"
IMPL = "torch.library.impl"
LIBRARY = "torch.library.Library"
OP_MAKERS = frozenset({CUSTOM_OP, "torch.library.triton_op"})


def aten_op(qualified: str | None) -> str | None:
    """The CUDA-only aten op a call's qualified name reaches (``torch.ops.aten._weight_int4pack_mm``,
    its ``.default`` overload, or the ``torch._weight_int4pack_mm`` binding), else None."""
    if qualified is None:
        return None
    parts = qualified.split(".")
    if parts[:3] == ["torch", "ops", "aten"] and len(parts) in (4, 5):
        name = parts[3]
    elif len(parts) == 2 and parts[0] == "torch":
        name = parts[1]
    else:
        return None
    return name if name in CUDA_ONLY_ATEN_OPS else None


def _names_cuda(node: cst.BaseExpression | None) -> bool:
    if node is None:
        return False
    values = string_values(node)
    return bool(values) and any("cuda" in v.lower() for v in values or ())


class CustomOpCuda(Transform):
    """Finds ops that exist only as CUDA kernels: `torch.library` registrations for CUDA, CUDA-only aten ops.

    What it does:
        Reports `torch.library.custom_op(..., device_types="cuda")` (call or decorator, also
        through another name bound to it: `_custom_op = torch.library.custom_op`),
        `torch.library.register_kernel(op, "cuda")`, `torch.library.impl(op, "CUDA")` (also the
        older `torch.library.impl(lib, "op", "CUDA")`), and, on
        objects defined in the same file (a name bound to `torch.library.Library(...)`, a
        function decorated with `custom_op`), `lib.impl("op", fn, "CUDA")` and
        `@my_op.register_kernel("cuda")`. A device list that names CUDA among others counts
        (`("cpu", "cuda")`); so do dispatch keys such as `"AutogradCUDA"`. Also reports calls of
        aten ops that only GPU builds implement (`torch.ops.aten._weight_int4pack_mm`,
        `_convert_weight_to_int4pack`, the cuSPARSELt `_cslt_*` ops, `_mixed_dtypes_linear`, the
        flash / memory-efficient / cuDNN attention kernels), under `torch.ops.aten` or `torch`.

    Why on TorchNeuron:
        The kernel is registered for the CUDA dispatch key only, so the op has no implementation
        for `neuron` tensors. Its body is usually a CUDA/Triton kernel launch.

    Example:
        @torch.library.custom_op("mylib::fused_gelu", mutates_args=(), device_types="cuda")
        def fused_gelu(x: torch.Tensor) -> torch.Tensor:
            ...

    Use instead:
        For a CUDA-only aten op: bf16 weights instead of int4 packing, `F.scaled_dot_product_attention`
        instead of a direct attention kernel, dense `torch.mm` instead of cuSPARSELt. For a
        registration: register a Neuron implementation: an NKI kernel with
        `torch_neuronx.nki_op("mylib::fused_gelu", mutates_args=...)` (typed signature; backward
        through `register_autograd()`), checking aws-neuron/nki-library first. If the body is plain
        PyTorch, registering it without `device_types` (or for `"neuron"`) may be enough (INF).

    Fix safety:
        Report only: the kernel behind the registration must be ported by hand.

    Evidence:
        DOC: `torch.ops` backed by CUDA kernels; NKI registration; real-world patterns
        (`custom_op(..., device_types="cuda")` declares a CUDA-only kernel). INF: the aten ops
        listed have no CPU kernel in stock PyTorch and none in TorchNeuron.
    """

    id = "NRN904"
    name = "custom-op-cuda"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "kernels"
    effort = "high"
    references = KERNEL_REFERENCES
    tokens = (b"custom_op", b"register_kernel", b".impl(", b"library", b"int4pack", b"_cslt_",
              b"_mixed_dtypes_linear", b"_attention_forward", b"_attention_backward", b"_scaled_dot_product_")
    examples = (
        Example(
            "import torch\n\n"
            "@torch.library.custom_op('mylib::gelu', mutates_args=(), device_types='cuda')\n"
            "def gelu(x: torch.Tensor) -> torch.Tensor:\n"
            "    return x\n",
            None,
        ),
        Example("import torch\nlib = torch.library.Library('mylib', 'IMPL')\nlib.impl('gelu', gelu_cuda, 'CUDA')\n",
                None),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._libraries: set[str] = set()  # names bound to `torch.library.Library(...)`
        self._ops: set[str] = set()  # names bound to custom ops (decorated functions)
        self._makers: set[str] = set()  # other names of `torch.library.custom_op` (a version guard's alias)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, (cst.Name, cst.Attribute)) and self.ctx.qualify(value) == CUSTOM_OP:
            self._makers.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
            return
        if not isinstance(value, cst.Call):
            return
        qualified = self.ctx.qualify(value.func)
        names = self._libraries if qualified == LIBRARY else self._ops if qualified in OP_MAKERS else None
        if names is None:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                names.add(name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            if self.ctx.qualify(target) in OP_MAKERS:
                self._ops.add(node.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.ctx.qualify(func)
        if qualified is None and isinstance(func, cst.Name) and func.value in self._makers:
            qualified = CUSTOM_OP
        op = aten_op(qualified)
        if op is not None:
            self.report(node, f"`{short(func, 60, tight=True)}(...)`: `aten::{op}` has GPU kernels only (no CPU or "
                        f"Neuron kernel); {CUDA_ONLY_ATEN_OPS[op]}", evidence=Evidence.INF)
        elif qualified == CUSTOM_OP:
            arg = argument(node, "device_types")
            if arg is not None and _names_cuda(arg.value):
                self._report(node, f"`torch.library.custom_op(..., device_types={short(arg.value, 60, tight=True)})`")
        elif qualified == IMPL and node.args and string_value(node.args[0].value) is None:
            # the older form, `impl(lib, "op", "CUDA")`: the dispatch key comes third
            arg = argument(node, "dispatch_key", 2)
            if arg is not None and _names_cuda(arg.value):
                self._report(node, f"`torch.library.impl(..., {short(arg.value, 60, tight=True)})`", name_at=1)
        elif qualified in (REGISTER_KERNEL, IMPL):
            arg = argument(node, "device_types" if qualified == REGISTER_KERNEL else "types", 1)
            if arg is not None and _names_cuda(arg.value):
                fn = qualified.rsplit(".", 1)[-1]
                self._report(node, f"`torch.library.{fn}(..., {short(arg.value, 60, tight=True)})`")
        elif qualified is None and isinstance(func, cst.Attribute) and func.attr.value in ("impl", "register_kernel"):
            owner = dotted_name(func.value)
            if func.attr.value == "impl" and owner in self._libraries:
                arg = argument(node, "dispatch_key", 2)
            elif func.attr.value == "register_kernel" and owner in self._ops:
                arg = argument(node, "device_types", 0)
            else:
                return
            if arg is not None and _names_cuda(arg.value):
                spelled = f"{owner}.{func.attr.value}"
                self._report(node, f"`{spelled}(..., {short(arg.value, 60, tight=True)})`", op=func.attr.value == "impl")

    def _report(self, node: cst.Call, what: str, op: bool = True, name_at: int = 0) -> None:
        first = (argument(node, "qualname", name_at) or argument(node, "name", name_at)
                 or argument(node, "op_name", name_at))
        name = string_value(first.value) if first is not None and op else None
        label = f" for `{name}`" if name else ""
        self.report(
            node,
            f"{what}{label} registers a CUDA-only kernel: the op has no Neuron implementation; "
            "register an NKI kernel with `torch_neuronx.nki_op` (check aws-neuron/nki-library first)",
        )
