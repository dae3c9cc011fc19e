"""NRN403: ``DistributedDataParallel(device_ids=..., output_device=...)`` and
``dist.barrier(device_ids=...)``: drop the CUDA device index."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.device_model import KeepsCudaBranches, keeps_cuda_hosts, process_group_edits
from neuronize.transforms._helpers.calls import keyword, without_args
from neuronize.transforms._helpers.device_choice import says_only_neuron
from neuronize.transforms._helpers.distributed import dist_function

_DDP = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DistributedDataParallel",
)


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


class DdpDeviceIds(KeepsCudaBranches, Transform):
    """Finds CUDA device indices passed to DistributedDataParallel and to `dist.barrier`.

    What it does:
        Drops `device_ids=` and `output_device=` of `DistributedDataParallel(...)` (any
        spelling: `DDP`, `nn.parallel.DistributedDataParallel`) and `device_ids=` of
        `dist.barrier(...)` on Neuron: on the `neuron` target they become `None if <the
        accelerator is Neuron> else <the CUDA value>`, which the CUDA hosts still need; the other
        targets remove them. Positional device ids are reported, not rewritten.

    Why on TorchNeuron:
        Under the `"neuron"` process group each process sees exactly one NeuronCore (the backend
        pins it with `NEURON_RT_VISIBLE_CORES=<LOCAL_RANK>`), so a per-rank GPU index has nothing
        to select; DDP takes the device from the module's parameters. `device_ids` in
        `dist.barrier` is an NCCL-specific argument.

    Example:
        model = DDP(model, device_ids=[local_rank], output_device=local_rank)
        dist.barrier(device_ids=[local_rank])

    Use instead:
        model = DDP(model)
        dist.barrier()

    Fix safety:
        Unsafe: the Neuron distributed guide's DDP call arguments were not visible, so dropping
        the arguments is an inference (`device_ids=[0]` would be the alternative). The drops are in
        the `process-group` edit group with NRN401's backend: applied with it or not at all.

    Evidence:
        INF: one device per process (the torch-neuronx process group).
    """

    id = "NRN403"
    targets = per_target.ALL
    name = "ddp-device-ids"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "distributed"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-torch-distributed.html",)
    tokens = (b"device_ids", b"output_device")
    examples = (
        Example(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(model, device_ids=[rank], output_device=rank)\n",
            ('from torch.nn.parallel import DistributedDataParallel as DDP\n'
                'import torch\n'
                '\n'
                'model = DDP(model, device_ids=None if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else [rank], output_device=None if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else rank)\n'),
        ),
        Example(
            "import torch.distributed as dist\ndist.barrier(device_ids=[local_rank])\n",
            ('import torch.distributed as dist\n'
                'import torch\n'
                '\n'
                'dist.barrier(device_ids=None if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else [local_rank])\n'),
        ),
        Example(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(model, device_ids=[rank], output_device=rank)\n",
            None, unsafe_fixes=False,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified is None:
            return
        if qualified in _DDP:
            self._ddp(node)
        elif dist_function(qualified) == "barrier":
            ids = keyword(node, "device_ids")
            if ids is not None and not _is_none(ids.value):
                if per_target.target(self.ctx) != per_target.NEURON:
                    self.fix(node, without_args(node, ids), "drops `device_ids=` from `dist.barrier`: an "
                             "NCCL-only argument (gloo rejects it); the barrier itself is kept", group=process_group_edits(self.ctx))
                    return
                if self._hosts_kept(node, [ids], "`device_ids=` of `dist.barrier`"):
                    return
                self.fix(node, without_args(node, ids),
                         "drops `device_ids=` from `dist.barrier`: each process has one NeuronCore; "
                         "the pre-beta backend supported barriers on the default group only", group=process_group_edits(self.ctx))

    def _ddp(self, node: cst.Call) -> None:
        positional = [a for a in node.args if a.keyword is None]
        if any(a.star for a in node.args):
            return
        if len(positional) > 1:
            self.report(node, "`DistributedDataParallel` with positional `device_ids`: remove the device "
                        "ids by hand (one NeuronCore per process)")
            return
        drop = [a for a in (keyword(node, "device_ids"), keyword(node, "output_device"))
                if a is not None and not _is_none(a.value)]
        if not drop:
            return
        names = " and ".join(f"`{a.keyword.value}=`" for a in drop if a.keyword is not None)
        if per_target.target(self.ctx) != per_target.NEURON:
            self.fix(node, without_args(node, *drop),
                     f"drops {names} from `DistributedDataParallel`: DDP then uses the module's device "
                     "(device ids are rejected for a CPU module; on CUDA the current device is used)",
                     group=process_group_edits(self.ctx))
            return
        if self._hosts_kept(node, drop, f"{names} of `DistributedDataParallel`"):
            return
        self.fix(node, without_args(node, *drop),
                 f"drops {names} from `DistributedDataParallel`: each process sees one NeuronCore "
                 "and DDP uses the module's device", group=process_group_edits(self.ctx))

    def _hosts_kept(self, node: cst.Call, args: list[cst.Arg], names: str) -> bool:
        """In a file that keeps its CUDA hosts or a library module (its callers run on every
        host), the arguments become ``None if <Neuron> else <the CUDA value>``: dropped on Neuron
        only, as the CUDA box still needs them (a wrapper forwards its caller's ``device_ids``)."""
        if not keeps_cuda_hosts(self.ctx):
            return False
        args = [a for a in args if not (isinstance(a.value, cst.IfExp) and says_only_neuron(a.value.test))]
        if not args:
            return True  # kept so by an earlier run
        test, imports = per_target.neuron_present(self.ctx)
        kept = {id(a): a.with_changes(value=cst.IfExp(test=test, body=cst.Name("None"), orelse=a.value))
                for a in args}
        new = node.with_changes(args=[kept.get(id(a), a) for a in node.args])
        self.fix(node, new, f"{names} kept for every host but Neuron (one NeuronCore per process there)",
                 imports=imports, group=process_group_edits(self.ctx))
        return True
