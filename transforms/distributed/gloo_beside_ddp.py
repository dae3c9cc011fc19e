"""NRN409: the default process group on gloo in a program that wraps its model in DDP."""

from __future__ import annotations

import libcst as cst

from neuronize.decision.policy import GLOO_GROUP
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.device_model import pins_outside_cuda_code
from neuronize.transforms._helpers.distributed import dist_function, request_torch_neuronx
from neuronize.transforms._helpers.literals import make_string, string_value
from neuronize.transforms._helpers.nodes import in_place


class GlooBesideDdp(Transform):
    """Finds a default process group on gloo where a model is wrapped in `DistributedDataParallel`.

    What it does:
        Rewrites the backend of `dist.init_process_group(backend="gloo")` (or `"gloo"` passed
        first), in a file that wraps a model in `DistributedDataParallel`, to `"neuron" if
        <the accelerator is Neuron> else "gloo"`: every other host keeps gloo, Neuron gets its
        own group. The device edits of the file are made only with it. A process group made
        only where CUDA runs, and `new_group(backend="gloo")` (a side group for CPU objects),
        are left alone; `--target cpu` keeps gloo, the CPU's group.

    Why on TorchNeuron:
        DDP runs its collectives on the default group, over the tensors of the model's device.
        Gloo handles CPU and CUDA tensors only: once the model and its batches move to Neuron,
        DDP over a gloo group raises on the Neuron parameters. TorchNeuron's process-group
        backend is `"neuron"`.

    Example:
        dist.init_process_group(backend="gloo", init_method="env://")
        model = DDP(model.cuda(rank), device_ids=[rank])

    Use instead:
        dist.init_process_group(backend="neuron" if on_neuron() else "gloo", init_method="env://")
        model = DDP(model.to("neuron") if on_neuron() else model.cuda(rank),
                    device_ids=None if on_neuron() else [rank])

    Fix safety:
        Unsafe: collectives the program runs on CPU tensors (gathering Python objects, CPU
        metrics) need a gloo group of their own on Neuron (`dist.new_group(backend="gloo")`).

    Evidence:
        DOC: the `"neuron"` backend (the distributed guide). INF: gloo has no Neuron tensors.
    """

    id = "NRN409"
    name = "gloo-beside-ddp"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "distributed"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",)
    tokens = (b"gloo",)
    targets = per_target.ALL
    examples = (
        Example("import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
                'dist.init_process_group(backend="gloo")\nmodel = DistributedDataParallel(model)\n',
                "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
                'dist.init_process_group(backend="neuron" if hasattr(torch, "accelerator") and '
                'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
                'else "gloo")\nmodel = DistributedDataParallel(model)\n'),
        Example('import torch.distributed as dist\ndist.init_process_group(backend="gloo")\nx = all_gather(stats)\n',
                finds=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if b"DistributedDataParallel" not in self.ctx.source or per_target.target(self.ctx) == per_target.CPU:
            return
        if dist_function(self.ctx.qualify(node.func)) != "init_process_group":
            return
        backend = argument(node, "backend", 0)
        pins = pins_outside_cuda_code(self.ctx, GLOO_GROUP)
        if backend is None or string_value(backend.value) != "gloo" or pins is None:
            return
        per_host, imports = per_target.neuron_only(self.ctx, make_string("neuron", backend.value), backend.value)
        self.fix(backend.value, in_place(per_host, backend.value, backend), 'process group on `"gloo"` beside '
                 "DistributedDataParallel -> `\"neuron\"` on Neuron: gloo has no Neuron tensors, so DDP over it "
                 "raises once the model is there; every other host keeps gloo", imports=imports, pins=pins)
        request_torch_neuronx(self, Safety.UNSAFE, group=pins)
