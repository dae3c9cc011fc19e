"""NRN116: ``torch.cuda.set_device(i)`` / ``torch.cuda.device(i)``: delete in torchrun code, else ``torch.neuron``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, ImportRequest, Safety
from neuronize.transforms._helpers.cuda_guard import calls_anywhere
from neuronize.transforms._helpers.cuda_runtime import CudaRef, _CudaApiRule, enclosing_small_statement, spelled
from neuronize.transforms._helpers.names import qualified_expr
from neuronize.transforms._helpers.device_model import keeps_cuda_hosts, kept_for_cuda, process_group_edits

PROCESS_GROUP_CALLS = frozenset({"init_process_group"})


class CudaSetDevice(_CudaApiRule):
    """Finds CUDA current-device selection (`torch.cuda.set_device(local_rank)`, `with torch.cuda.device(i):`).

    What it does:
        On the `neuron` target the call stays for the CUDA hosts the file still runs on: `if not
        <the accelerator is Neuron>: torch.cuda.set_device(...)` in a file that calls
        `init_process_group` (torchrun / DDP / FSDP code) or for a device chosen per rank
        (`set_device(local_rank)`, whose process group another module makes), `if <the accelerator is Neuron>:
        torch.neuron.set_device(...) else: <the call>` elsewhere; `torch.cuda.device(i)` contexts
        are reported. A `set_device` call whose value is used, or one whose argument mentions a
        rank in a file without `init_process_group` (the process group is created in another
        module), is reported. The `accelerator` target deletes the call in torchrun code (keeping
        comments and a valid block) and writes the accelerator's `set_device` elsewhere.

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
            ('import torch\n'
                'import torch.distributed as dist\n'
                '\n'
                'def setup(local_rank):\n'
                '    if not (hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"):\n'
                '        torch.cuda.set_device(local_rank)\n'
                '    dist.init_process_group("nccl")\n'),
        ),
        Example("import torch\ntorch.cuda.set_device(1)\n", ('import torch\n'
                'if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":\n'
                '    torch.neuron.set_device(1)\n'
                'else:\n'
                '    torch.cuda.set_device(1)\n')),
        Example(
            "import torch\nwith torch.cuda.device(1):\n    x = torch.ones(2)\n",
        ),
        Example(
            'import torch\nimport torch.distributed as dist\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n\n'
            'def setup(rank):\n    dist.init_process_group("nccl")\n    torch.cuda.set_device(rank)\n',
            'import torch\nimport torch.distributed as dist\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n\n'
            'def setup(rank):\n    dist.init_process_group("nccl")\n'
            '    if not (hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == \"neuron\"):\n        torch.cuda.set_device(rank)\n',
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
        keeps_cuda = keeps_cuda_hosts(self.ctx)
        if ref.fn == "device":
            if torchrun:
                self.report(ref.outer, f"{spelled(ref)} in torchrun code: under the `neuron` process group each "
                                       "process sees one NeuronCore (index 0); remove the context by hand")
            elif keeps_cuda:
                self.report(ref.outer, f"{spelled(ref)}: kept for CUDA hosts (this file's device choice is "
                                       f"host-aware); enter {shown} on Neuron instead, by hand")
            else:
                self.rewrite(ref, target, f"{spelled(ref)} -> {shown}")
            return
        statement = enclosing_small_statement(self.ctx, ref)
        group = process_group_edits(self.ctx)
        if keeps_cuda:
            self._keep_for_cuda(ref, statement, torchrun or self._per_rank(ref), group)
            return
        if torchrun:
            if statement is None:
                self.report(ref.outer, f"{spelled(ref)} in torchrun code: the `neuron` process group pins each "
                                       "process to one NeuronCore; remove this by hand", group=group)
            else:
                self.remove(statement, f"{spelled(ref)} deleted: the `neuron` process group pins each process "
                                       "to one NeuronCore; call no Neuron API before `init_process_group`",
                            group=group)
            return
        if self._per_rank(ref):
            self.report(ref.outer, f"{spelled(ref)} per rank, but no `init_process_group` in this file: delete it "
                                   f"if the process group is `neuron` (it pins one NeuronCore per process), "
                                   f"else use {shown}")
            return
        self.rewrite(ref, target, f"{spelled(ref)} -> {shown}")

    def _per_rank(self, ref: CudaRef) -> bool:
        """The call selects a device per process (its argument names a rank: ``local_rank``)."""
        return ref.call is not None and "rank" in self.ctx.module.code_for_node(ref.call).lower()

    def _keep_for_cuda(self, ref: CudaRef, statement: cst.BaseSmallStatement | None, torchrun: bool,
                       group: str) -> None:
        """In a file that keeps its CUDA hosts, the call stays for them: ``if not <Neuron>:`` in
        torchrun code or for a device chosen per rank (the `neuron` process group pins each
        process's NeuronCore, wherever the group is made), else ``if <Neuron>:
        torch.neuron.set_device(...) else: <the call>``."""
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(ref.outer, f"{spelled(ref)}: kept for CUDA hosts (this file's device choice is host-aware); "
                                   "skip it on Neuron by hand", group=group)
            return
        neuron: cst.SimpleStatementLine | None = None
        imports: tuple[ImportRequest, ...] = ()
        if not torchrun:
            func, imports = qualified_expr(self.ctx, f"torch.neuron.{ref.fn}")
            neuron = line.deep_replace(ref.node, func.with_changes(lpar=ref.node.lpar, rpar=ref.node.rpar))  # type: ignore[assignment]
        new, more = kept_for_cuda(self.ctx, line, neuron)
        what = ("skipped on Neuron, whose process group pins each process to one NeuronCore" if torchrun
                else "Neuron calls `torch.neuron.set_device()` instead")
        self.fix(line, new, f"{spelled(ref)} kept for CUDA hosts (this file's device choice is host-aware); {what}",
                 imports=(*imports, *more), group=group)
