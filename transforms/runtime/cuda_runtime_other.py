"""NRN119: any other ``torch.cuda`` runtime API: no known TorchNeuron equivalent (report only)."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.cuda_runtime import OTHERS, PREFIX, is_legacy_tensor_type, match, owned

#: specific advice where there is some (reference F14 for GPU introspection)
MONITORING = frozenset({"utilization", "memory_usage", "temperature", "power_draw", "clock_rate",
                        "list_gpu_processes"})
HINTS = {
    "ipc_collect": "it frees CUDA IPC memory only; delete it",
    "init": "the Neuron device initialises on first use; delete it",
    "is_initialized": "`torch.accelerator.is_available()` may be what is meant",
    "get_arch_list": "CUDA architectures have no Neuron meaning; delete the check",
    "get_gencode_flags": "CUDA architectures have no Neuron meaning; delete the check",
    "set_stream": "use `with torch.neuron.stream(s):` instead",
    "StreamContext": "use `torch.neuron.stream(s)` instead",
    "memory_snapshot": "see the Neuron memory-profiling guide for snapshots",
    "_record_memory_history": "see the Neuron memory-profiling guide for snapshots",
    "_dump_snapshot": "see the Neuron memory-profiling guide for snapshots",
}


class CudaRuntimeOther(Transform):
    """Reports every other `torch.cuda` runtime API (`torch.cuda.utilization()`, `ipc_collect()`, `get_arch_list()` ...).

    What it does:
        Reports references to `torch.cuda.<name>` that no other neuronize rule migrates or
        reports, in every import spelling, once per use, with advice where there is some.
        Mixed precision (`torch.cuda.amp`), NVTX ranges, CUDA graphs, custom-kernel modules
        (`jiterator`) and legacy tensor types (`torch.cuda.FloatTensor`) belong to other rules
        and are not reported here.

    Why on TorchNeuron:
        On Trainium these calls raise or return meaningless values, and TorchNeuron has no
        known counterpart. GPU monitoring (`utilization`, `temperature`, `power_draw`) is done
        with `neuron-top`, `neuron-monitor` or Neuron Explorer instead.

    Example:
        print(torch.cuda.utilization())
        torch.cuda.ipc_collect()

    Use instead:
        # monitor with `neuron-top` / `neuron-monitor`
        # (ipc_collect deleted: it only frees CUDA IPC memory)

    Fix safety:
        Report only: whether the call can be deleted, guarded or replaced depends on what the
        code does with it.

    Evidence:
        INF: no TorchNeuron source or document mentions these functions. DOC: monitoring tools.
    """

    id = "NRN119"
    name = "cuda-runtime-other"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "device"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/troubleshooting.html",)
    tokens = (b"cuda",)
    examples = (
        Example("import torch\nprint(torch.cuda.utilization())\n", None),
        Example("from torch import cuda\ncuda.ipc_collect()\n", None),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._owned = owned()  # what the family's other rules handle

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.ctx.names.names_under(PREFIX):
            self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        ref = match(self.ctx, node)
        if ref is None:
            return
        fn = ref.fn
        if fn in self._owned or fn in OTHERS or is_legacy_tensor_type(fn):
            return  # `torch.cuda.Event.elapsed_time` and the like: methods of migrated names
        shown = f"`torch.cuda.{'.'.join((fn,) + ref.extra)}{'()' if ref.call is not None else ''}`"
        if fn in MONITORING:
            self.report(ref.outer, f"{shown}: GPU monitoring; use `neuron-top` / `neuron-monitor` instead",
                        evidence=Evidence.DOC)
            return
        hint = HINTS.get(fn, "remove it or guard it with a CUDA check")
        self.report(ref.outer, f"{shown}: no TorchNeuron equivalent known; {hint}")
