"""NRN405: ``torch.nn.DataParallel`` (single-process multi-device) is not supported."""

from __future__ import annotations

import libcst as cst

from neuronize.decision.policy import WRAPPED_MODEL
from neuronize.transform import Evidence, Example, Safety, Transform

_DATA_PARALLEL = {
    "torch.nn.DataParallel": "DataParallel",
    "torch.nn.parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.data_parallel": "data_parallel",
    "torch.nn.parallel.data_parallel.data_parallel": "data_parallel",
}


class DataParallel(Transform):
    """Finds single-process multi-device `DataParallel`, which TorchNeuron does not support.

    What it does:
        Reports calls of `torch.nn.DataParallel(...)` (any spelling: `nn.DataParallel`,
        `from torch.nn import DataParallel as DP`) and of the functional
        `torch.nn.parallel.data_parallel(...)`. References such as
        `isinstance(model, nn.DataParallel)` (unwrapping `.module`) are harmless and not reported.
        Report only. A wrapper made unconditionally holds every device edit of its file (edit
        group `devices of a program whose model DataParallel wraps`): on Trainium it takes the
        Neuron devices and scatters its inputs with CUDA's collectives, so the moved program
        would fail at its first forward. One made on a condition (several GPUs, a mode the user
        picks) never wraps on Neuron and holds nothing.

    Why on TorchNeuron:
        TorchNeuron's distributed design is one NeuronCore per process; the process-group setup
        asserts against several devices per process. Data parallelism on Trainium is DDP or
        FSDP2 (`fully_shard`) under `torchrun --nproc_per_node=<NeuronCores>` with the `"neuron"`
        backend.

    Example:
        model = torch.nn.DataParallel(model)

    Use instead:
        dist.init_process_group(backend="neuron")
        model = DistributedDataParallel(model.to("neuron"))
        # launched with: torchrun --nproc_per_node=<NeuronCores> train.py

    Fix safety:
        Report only: moving to DDP changes the launcher, the data sharding and the logging.

    Evidence:
        INF: the torch-neuronx process group asserts one device per process.
    """

    id = "NRN405"
    name = "data-parallel"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "distributed"
    effort = "medium"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"DataParallel", b"data_parallel")
    examples = (
        Example("import torch\nmodel = torch.nn.DataParallel(model)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value not in ("DataParallel", "data_parallel"):
            return
        if not isinstance(func, (cst.Attribute, cst.Name)):
            return
        kind = _DATA_PARALLEL.get(self.ctx.qualify(func) or "")
        if kind is None:
            return
        self.report(node, f"`{kind}` runs one process over several devices, which TorchNeuron does not "
                    "support (one NeuronCore per process): use DDP or FSDP2 under `torchrun` with the "
                    '`"neuron"` backend', pins=None if self._conditional() else WRAPPED_MODEL)

    def _conditional(self) -> bool:
        """The wrapper is made only on a condition (``if torch.cuda.device_count() > 1:``, ``if
        args.n_gpu > 1:``, ``if mode == "dp":``), which a host without several GPUs does not meet:
        Neuron's placements need not wait for it."""
        return any(isinstance(anc, (cst.If, cst.IfExp)) for anc in self.ctx.ancestors())
