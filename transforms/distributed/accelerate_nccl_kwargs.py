"""NRN406: the NCCL backend handed to Accelerate (``InitProcessGroupKwargs(backend="nccl")``)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.distributed import names_nccl
from neuronize.transforms._helpers.messages import short

KWARGS_HANDLER = "accelerate.utils.InitProcessGroupKwargs"


class AccelerateNcclKwargs(Transform):
    """Finds the NCCL process-group backend passed to Accelerate through `InitProcessGroupKwargs`.

    What it does:
        Reports `InitProcessGroupKwargs(backend="nccl")` (also `"cuda:nccl"` and
        `torch.distributed.Backend.NCCL`), in any import spelling (`from accelerate.utils import
        InitProcessGroupKwargs`, `accelerate.utils.InitProcessGroupKwargs`). Accelerate hands the
        kwargs handler's backend to `torch.distributed.init_process_group` when the `Accelerator`
        is built, so this is the process group's backend, one step removed.

    Why on TorchNeuron:
        NCCL is NVIDIA's collective library; TorchNeuron registers its own process-group backend,
        `"neuron"`. Whether Accelerate's state setup accepts that backend is not documented.

    Example:
        handler = InitProcessGroupKwargs(backend="nccl", timeout=timedelta(hours=1))
        accelerator = Accelerator(kwargs_handlers=[handler])

    Use instead:
        handler = InitProcessGroupKwargs(timeout=timedelta(hours=1))  # Accelerate picks the backend
        # or, on Neuron, a plain `torch.distributed.init_process_group("neuron")` training loop

    Fix safety:
        Report only: Accelerate's support for the `"neuron"` backend is unverified, and dropping the
        argument changes what a CUDA host runs only if Accelerate's default differs.

    Evidence:
        DOC: the `"neuron"` process group; INF: Accelerate with that backend.
    """

    id = "NRN406"
    name = "accelerate-nccl-kwargs"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "distributed"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://huggingface.co/docs/accelerate/package_reference/kwargs",
    )
    tokens = (b"InitProcessGroupKwargs",)
    examples = (
        Example("from accelerate.utils import InitProcessGroupKwargs\nh = InitProcessGroupKwargs(backend='nccl')\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualify(node.func) != KWARGS_HANDLER:
            return
        backend = keyword(node, "backend")
        if backend is not None and names_nccl(self.ctx, backend.value):
            self.report(backend, f"`{short(node.func, 40, tight=True)}(backend={short(backend.value, 40, tight=True)})`: "
                        "Accelerate builds an NCCL process group, which does not exist on Trainium; on Neuron "
                        "the backend is `\"neuron\"` (Accelerate's support for it is unverified: check, or drop "
                        "`backend=` and let Accelerate choose)")
