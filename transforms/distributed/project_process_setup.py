"""NRN407: a call of the project's own function that sets up NCCL processes."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.project_functions import names_one_of
from neuronize.decision.policy import PROCESS_SET_UP
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.device_model import pins_outside_cuda_code
from neuronize.transforms._helpers.messages import short


class ProjectProcessSetup(Transform):
    """Finds calls of the project's own function that creates an NCCL process group.

    What it does:
        Reports a call of a function another module of the project defines that always creates
        an NCCL process group (`dist.init_process_group(backend="nccl")` in its own body, not
        under an `if` and with no `return` before it; or a call of such a function), such as a
        `utils.init_distributed_mode(args)` each training script calls first. The device edits
        of the calling file (placements, autocasts, compile backends) wait for it: they are
        reported, not made, in a run without `--unsafe-fixes`. Report only.

    Why on TorchNeuron:
        Until that set-up is migrated (NRN401 in its own module, an unsafe fix where it pins a
        CUDA device too), Trainium stops at the process group, before any line of the script
        runs: moving the script's devices alone gains Neuron nothing, and splits one decision
        across files. With `--unsafe-fixes` the set-up and the script move in the same run.

    Example:
        from utils import init_distributed_mode

        init_distributed_mode(args)
        model = Net().cuda()

    Use instead:
        Migrate the process group in `utils.init_distributed_mode` (NRN401), then the script's
        devices with it.

    Fix safety:
        Report only; it holds the file's device edits back in a safe-only run.

    Evidence:
        DOC: the `"neuron"` process-group backend,
        https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html
    """

    id = "NRN407"
    name = "project-process-setup"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "distributed"
    effort = "medium"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"cuda",)
    examples = (
        Example("import torch\nfrom utils import init_distributed_mode\n\ninit_distributed_mode(args)\n"
                "model = Net().cuda()\n", unsafe_fixes=False,
                facts=(("cuda_setups", frozenset({"utils.init_distributed_mode"})),)),
        Example("import torch\nimport torch.distributed as dist\n\n\ndef init_distributed():\n"
                "    dist.init_process_group(backend=\"nccl\")\n\n\ninit_distributed()\nmodel = Net().cuda()\n",
                finds=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        setups = self.ctx.options.cuda_setups
        if not setups or self.ctx.options.unsafe_fixes:
            return  # with --unsafe-fixes the set-up moves in the same run
        qualified = self.ctx.qualify(node.func)
        if qualified is None or not names_one_of(qualified, setups):
            return
        self.report(node, f"`{short(node.func, 40)}()` sets up NCCL processes in the project's module: migrate its "
                          "process group there (NRN401); the device edits of this file wait for it",
                    evidence=Evidence.INF, pins=pins_outside_cuda_code(self.ctx, PROCESS_SET_UP))
