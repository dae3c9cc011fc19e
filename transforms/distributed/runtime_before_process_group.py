"""NRN404: device work that runs before ``init_process_group`` in the same body."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument, keyword
from neuronize.transforms._helpers.distributed import backend_argument, creates_process_group
from neuronize.transforms._helpers.literals import cuda_literal, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.nodes import enclosing_body
from neuronize.analysis.walk import visit

# torch.cuda / torch.neuron calls that do not touch a device (or that other rules delete)
_HARMLESS = {"is_available", "device_count", "set_device", "manual_seed", "manual_seed_all", "seed",
             "is_initialized", "is_bf16_supported", "get_device_name", "get_device_capability"}
#: choosing the current device where it is not `torch.cuda` (whose `set_device` NRN116 deletes in
#: process-group code): the Neuron process group picks each process's NeuronCore itself
_SET_DEVICE = {"torch.neuron.set_device", "torch.accelerator.set_device_index", "torch.accelerator.set_device_idx"}
SET_DEVICE_WHY = ("the Neuron process group pins each process to its NeuronCore itself and requires the device "
                  "runtime to be untouched until it is created; delete it (or move it after)")


def _is_device_expr(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A device string, ``torch.device(...)``, or a variable whose name says it is a device."""
    if cuda_literal(node) is not None:
        return True
    value = string_value(node)
    if value is not None:
        return value == "neuron" or value.startswith("neuron:")
    if isinstance(node, cst.Call):
        return ctx.qualify(node.func) == "torch.device"
    if isinstance(node, cst.Name):
        return "device" in node.value.lower() and ctx.qualify(node) is None
    if isinstance(node, cst.Attribute):
        return "device" in node.attr.value.lower() and ctx.qualify(node) is None
    return False


def _placement(ctx: FileContext, node: cst.Call) -> str | None:
    """What kind of device work ``node`` is, if any."""
    func = node.func
    qualified = ctx.qualify(func)
    module = _device_module_call(ctx, func)
    if qualified in _SET_DEVICE or module == "set_device":
        return f"`{short(func, 60)}(...)`"
    if module is not None:
        return None if module in _HARMLESS or module.startswith("amp") else f"`{short(func, 60)}(...)`"
    if qualified is not None:
        for prefix in ("torch.cuda.", "torch.neuron."):
            if qualified.startswith(prefix):
                rest = qualified[len(prefix):]
                if rest.split(".")[0] in _HARMLESS or rest.startswith("amp"):
                    return None
                return f"`{qualified}(...)`"
        if qualified == "torch.cuda":
            return None
    if isinstance(func, cst.Attribute) and qualified is None:
        if func.attr.value == "cuda":
            return "`.cuda()`"
        if func.attr.value == "to":
            target = argument(node, "device", 0)
            if target is not None and _is_device_expr(ctx, target.value):
                return "`.to(<device>)`"
    device = keyword(node, "device")
    if device is not None and _is_device_expr(ctx, device.value) and qualified != "torch.device":
        return "a tensor created with `device=`"
    return None


def _device_module_call(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """``set_device`` for ``torch.get_device_module().set_device`` (the device module of any
    device, ``torch.neuron`` on Trainium); None for any other function."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) \
            and ctx.qualify(func.value.func) == "torch.get_device_module":
        return func.attr.value
    return None


def creation(ctx: FileContext, node: cst.Call) -> str | None:
    """How a message names the call when ``node`` creates a process group that touches the device
    runtime (``init_process_group``, DeepSpeed's ``init_distributed``); None for a call that does
    not, or a CPU-only group (``"gloo"``, ``"mpi"``)."""
    kind = creates_process_group(ctx.qualify(node.func))
    if kind not in ("init_process_group", "deepspeed"):
        return None
    backend = backend_argument(node, kind)
    if backend is not None and string_value(backend.value) in ("gloo", "mpi"):
        return None  # a CPU-only group: the device runtime is not involved
    return "`init_process_group`" if kind == "init_process_group" else "`deepspeed.init_distributed`"


class _Finder(cst.CSTVisitor):
    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.found: list[tuple[cst.Call, str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        what = _placement(self.ctx, node)
        if what is not None:
            self.found.append((node, what))
            return False
        return True


class RuntimeBeforeProcessGroup(Transform):
    """Finds device placement that runs before the process group is created.

    What it does:
        In the function (or module body) that calls `dist.init_process_group(...)` or DeepSpeed's
        `deepspeed.init_distributed(...)`, reports every statement before that call which places
        a model or tensor on a device (`.cuda()`, `.to(device)`, `device=...` in a factory), calls
        a `torch.cuda.*` / `torch.neuron.*` / `torch.get_device_module().*` runtime function
        (seeding, `is_available` and `device_count` are not counted), or chooses the current device
        other than through `torch.cuda` (`torch.get_device_module().set_device(local_rank)`,
        `torch.neuron.set_device`, `torch.accelerator.set_device_index`; NRN116 deletes
        `torch.cuda.set_device`). A group on `"gloo"` or `"mpi"` is not counted. Only statement
        order in one body is checked; work done in other functions is not followed. Report only.

    Why on TorchNeuron:
        The `"neuron"` process group pins each process to its NeuronCore
        (`NEURON_RT_VISIBLE_CORES`) and asserts that the Neuron runtime was not initialised before
        `init_process_group`; placing anything on the device first initialises it, and choosing
        a core by hand (`set_device(local_rank)`) conflicts with the one the group picks.

    Example:
        model = Net().cuda()
        dist.init_process_group("nccl")

    Use instead:
        dist.init_process_group("neuron")
        model = Net().to("neuron")

    Fix safety:
        Report only: moving statements can change what the code means.

    Evidence:
        SRC: the process-group setup of a pre-release torch-neuronx drop.
    """

    id = "NRN404"
    name = "runtime-before-process-group"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.SRC
    section = "distributed"
    effort = "medium"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"init_process_group", b"init_distributed")
    examples = (
        Example(
            "import torch.distributed as dist\n\n\ndef main(model):\n    model = model.cuda()\n"
            "    dist.init_process_group(\"nccl\")\n"
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._done: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        created = creation(self.ctx, node)
        if created is None:
            return
        body, statement = enclosing_body(list(self.ctx.ancestors()))
        if body is None or statement is None:
            return
        for earlier in body:
            if earlier is statement:
                break
            for call, what in self._placements(earlier):
                if id(call) in self._done:
                    continue
                self._done.add(id(call))
                why = SET_DEVICE_WHY if "set_device" in what else (
                    "the Neuron process group requires the device runtime to be untouched until it is created; "
                    f"move this after {created}")
                self.report(call, f"{what} runs before {created} in this body: {why}")

    def _placements(self, statement: cst.CSTNode) -> Iterator[tuple[cst.Call, str]]:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return iter(())
        finder = _Finder(self.ctx)
        visit(statement, finder)
        return iter(finder.found)
