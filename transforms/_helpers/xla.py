"""PyTorch/XLA-era code (``torch_xla``) and what replaces it natively: the planning functions of
NRN504, pure (values in, values out)."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import dotted_name
from neuronize.transform import ImportRequest
from neuronize.transforms._helpers.calls import argument, keyword, without_args
from neuronize.transforms._helpers.distributed import dist_function
from neuronize.transforms._helpers.literals import string_like, string_value

XLA_DEVICE = ("torch_xla.core.xla_model.xla_device", "torch_xla.device")
XLA_SYNC = ("torch_xla.core.xla_model.mark_step", "torch_xla.sync")
XLA_STEP = "torch_xla.core.xla_model.optimizer_step"
XLA_HINTS = {
    "get_ordinal": "`dist.get_rank()`",
    "get_local_ordinal": '`int(os.environ["LOCAL_RANK"])`',
    "xrt_world_size": "`dist.get_world_size()`",
    "world_size": "`dist.get_world_size()`",
    "global_ordinal": "`dist.get_rank()`",
    "local_ordinal": '`int(os.environ["LOCAL_RANK"])`',
    "is_master_ordinal": "`dist.get_rank() == 0`",
    "master_print": "a `print` on rank 0",
    "save": "`torch.save` on rank 0",
    "rendezvous": "`dist.barrier()`",
    "all_reduce": "`dist.all_reduce`",
    "all_gather": "`dist.all_gather_into_tensor`",
    "reduce_scatter": "`dist.reduce_scatter_tensor`",
    "spawn": "`torchrun --nproc_per_node=<NeuronCores>`",
    "MpDeviceLoader": "the plain `DataLoader` (move batches with `.to(\"neuron\")`)",
    "ParallelLoader": "the plain `DataLoader` (move batches with `.to(\"neuron\")`)",
}


def import_removals(ctx: FileContext, func: cst.BaseExpression) -> tuple[ImportRequest, ...]:
    """The imports of ``torch_xla`` that a call through ``func`` came by, to drop once unused."""
    head = func
    while isinstance(head, cst.Attribute):
        head = head.value
    if not isinstance(head, cst.Name):
        return ()
    full = ctx.qualify(head)
    if not full or not full.startswith("torch_xla"):
        return ()
    if full == head.value:
        return (ImportRequest(full, remove=True),)
    module, _, obj = full.rpartition(".")
    return (
        ImportRequest(full, asname=head.value, remove=True),
        ImportRequest(module, obj=obj, asname=None if obj == head.value else head.value, remove=True),
    )


def xla_backend_plan(ctx: FileContext, node: cst.Call) -> tuple[cst.Call, str] | None:
    """A process group created on the ``"xla"`` backend, on ``"neuron"`` (without
    ``init_method="xla://"``), and the message of the fix; None for any other call."""
    name = dist_function(ctx.qualify(node.func))
    if name not in ("init_process_group", "new_group"):
        return None
    arg = argument(node, "backend", 0 if name == "init_process_group" else 2)
    if arg is None or string_value(arg.value) != "xla":
        return None
    new = node.with_changes(args=[
        a.with_changes(value=string_like(a.value, "neuron")) if a is arg else a for a in node.args])
    init = keyword(new, "init_method")
    dropped = ""
    if init is not None and (string_value(init.value) or "").startswith("xla://"):
        new = without_args(new, init)
        dropped = ' and drops `init_method="xla://"` (env:// is the default)'
    return new, f'backend `"xla"` -> `"neuron"`{dropped}: the native process-group backend'


def optimizer_step(node: cst.Call) -> cst.Call | None:
    """``xm.optimizer_step(opt)`` (with at most ``barrier=``) as ``opt.step()``; None for a call
    with other arguments."""
    opt = argument(node, "optimizer", 0)
    others = [a for a in node.args if a.keyword is not None and a.keyword.value != "barrier"]
    given = len(node.args) - (1 if keyword(node, "barrier") else 0)
    if opt is None or others or given != 1 or any(a.star for a in node.args):
        return None
    return cst.Call(func=cst.Attribute(value=opt.value, attr=cst.Name("step")))


def imports_xla(small: cst.BaseSmallStatement) -> bool:
    """``small`` imports ``torch_xla`` (or one of its modules)."""
    if isinstance(small, cst.Import):
        return any((dotted_name(a.name) or "").split(".")[0] == "torch_xla" for a in small.names)
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        return (dotted_name(small.module) or "").split(".")[0] == "torch_xla"
    return False
