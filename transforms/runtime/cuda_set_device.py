"""NRN116: ``torch.cuda.set_device(i)`` / ``torch.cuda.device(i)``: delete in torchrun code, else ``torch.neuron``."""

from __future__ import annotations

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_guard import calls_anywhere
from neuronize.transforms._helpers.distributed import PROCESS_GROUP
from neuronize.transforms._helpers.cuda_runtime import CudaRef, _CudaApiRule, enclosing_small_statement, spelled

PROCESS_GROUP_CALLS = frozenset({"init_process_group"})


class CudaSetDevice(_CudaApiRule):
    """Finds CUDA current-device selection (`torch.cuda.set_device(local_rank)`, `with torch.cuda.device(i):`).

    What it does:
        In a file that calls `init_process_group` (torchrun / DDP / FSDP code), deletes
        `torch.cuda.set_device(...)` statements, keeping comments and a valid block (`pass`), and
        reports `torch.cuda.device(...)` contexts. Elsewhere, rewrites
        `torch.cuda.set_device(i)` to `torch.neuron.set_device(i)` and `torch.cuda.device(i)`
        to `torch.neuron.device(i)`. A `set_device` call whose value is used, or one whose
        argument mentions a rank in a file without `init_process_group` (the process group is
        created in another module), is reported.

    Why on TorchNeuron:
        The `neuron` process group pins each process to one NeuronCore itself (it exports
        `NEURON_RT_VISIBLE_CORES=<LOCAL_RANK>` unless the user set it) and asserts that exactly
        one device is visible, so every process sees device 0 only: `set_device(local_rank)`
        would fail on every rank but the first. It also asserts that the Neuron runtime was not
        initialised before `init_process_group`, so no Neuron call may precede it. Single-process
        code that picks a core keeps doing so with `torch.neuron.set_device`.

    Example:
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")

    Use instead:
        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("nccl")  # backend: NRN4xx

    Fix safety:
        Unsafe: the pinning behaviour is read in a pre-release source drop of the process group,
        and deleting a statement is a change of behaviour (a process that never calls
        `init_process_group` would stay on core 0). `torch.neuron.set_device` / `device` are
        known from source, not documentation. In torchrun code the deletions (and a `set_device`
        left for manual work) are in the `process-group` edit group with NRN401's backend: a
        `"neuron"` process group is never written next to a kept `torch.cuda.set_device`.

    Evidence:
        SRC: torch-neuronx distributed process group, `set_device`, `device` in
        `torch_neuronx/__init__.py`.
    """

    id = "NRN116"
    targets = per_target.ALL
    name = "cuda-set-device"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"cuda",)
    FUNCTIONS = frozenset({"set_device", "device"})
    examples = (
        Example(
            "import torch\nimport torch.distributed as dist\n\n"
            "def setup(local_rank):\n    torch.cuda.set_device(local_rank)\n    dist.init_process_group(\"nccl\")\n",
            "import torch\nimport torch.distributed as dist\n\n"
            "def setup(local_rank):\n    dist.init_process_group(\"nccl\")\n",
        ),
        Example("import torch\ntorch.cuda.set_device(1)\n", "import torch\ntorch.neuron.set_device(1)\n"),
        Example(
            "import torch\nwith torch.cuda.device(1):\n    x = torch.ones(2)\n",
            "import torch\nwith torch.neuron.device(1):\n    x = torch.ones(2)\n",
        ),
    )

    _torchrun: bool | None = None

    def target_for(self, ref: CudaRef) -> str | None:
        return f"torch.neuron.{ref.fn}"

    def _is_torchrun_file(self) -> bool:
        if self._torchrun is None:
            self._torchrun = calls_anywhere(self.ctx, PROCESS_GROUP_CALLS)
        return self._torchrun

    def on_ref(self, ref: CudaRef) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            if ref.fn == "device":
                self.report(ref.outer, f"{spelled(ref)}: CUDA only; use `torch.accelerator.device_index(i)` "
                                       "on an accelerator, or remove it for the CPU")
            else:
                self.portable(ref, "CUDA selects its device per process; the CPU and the Neuron process group "
                                   "need no selection")
            return
        target = f"torch.neuron.{ref.fn}"
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        torchrun = self._is_torchrun_file()
        if ref.fn == "device":
            if torchrun:
                self.report(ref.outer, f"{spelled(ref)} in torchrun code: under the `neuron` process group each "
                                       "process sees one NeuronCore (index 0); remove the context by hand")
            else:
                self.rewrite(ref, target, f"{spelled(ref)} -> {shown}")
            return
        statement = enclosing_small_statement(self.ctx, ref)
        if torchrun:
            if statement is None:
                self.report(ref.outer, f"{spelled(ref)} in torchrun code: the `neuron` process group pins each "
                                       "process to one NeuronCore; remove this by hand", group=PROCESS_GROUP)
            else:
                self.remove(statement, f"{spelled(ref)} deleted: the `neuron` process group pins each process "
                                       "to one NeuronCore; call no Neuron API before `init_process_group`",
                            group=PROCESS_GROUP)
            return
        if ref.call is not None and "rank" in self.ctx.module.code_for_node(ref.call).lower():
            self.report(ref.outer, f"{spelled(ref)} per rank, but no `init_process_group` in this file: delete it "
                                   f"if the process group is `neuron` (it pins one NeuronCore per process), "
                                   f"else use {shown}")
            return
        self.rewrite(ref, target, f"{spelled(ref)} -> {shown}")
