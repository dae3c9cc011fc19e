"""NRN402: ``init_device_mesh("cuda", ...)`` / ``DeviceMesh("cuda", ...)`` -> ``"neuron"``."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.device_model import keeps_cuda_hosts, process_group_edits
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.names import last_name

_MESH_CALLS = ("init_device_mesh", "DeviceMesh")


#: what the mesh spans, per target
WHY = {
    per_target.NEURON: "meshes on Trainium span NeuronCores",
    per_target.CPU: "the mesh spans the devices the process group runs on",
    per_target.ACCELERATOR: "the mesh spans the devices the process group runs on",
}


class CudaDeviceMesh(Transform):
    """Finds device meshes built over CUDA devices.

    What it does:
        Rewrites the device type of `init_device_mesh("cuda", ...)` and `DeviceMesh("cuda", ...)`
        (positional or `device_type="cuda"`) to `"neuron"`, under any import spelling
        (`torch.distributed.device_mesh`, `torch.distributed.tensor`, `torch.distributed._tensor`).
        A device type held in a variable is left to the rules that rewrite device strings.

    Why on TorchNeuron:
        TorchNeuron registers a `neuron` device and a `neuron` process-group backend that
        implement DeviceMesh, DTensor and `fully_shard`; TorchTitan on Trainium builds its meshes
        with the `"neuron"` device type. Mesh sizes count NeuronCores, not GPUs.

    Example:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cuda", (world_size,), mesh_dim_names=("dp",))

    Use instead:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("neuron", (world_size,), mesh_dim_names=("dp",))

    Fix safety:
        Safe: the device type is the only change. In a file whose code chooses among hosts, or a
        library module (no work at its top level: its callers run on every host), the
        mesh gains Neuron host-aware, `"neuron" if on_neuron() else "cuda"`: the CUDA box keeps
        its mesh.

    Evidence:
        DOC: about-torchtitan-neuron; the exact call spelling is also widespread in third-party
        code.
    """

    id = "NRN402"
    targets = per_target.ALL
    name = "cuda-device-mesh"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "distributed"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-torch-distributed.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/training/torchtitan/about-torchtitan-neuron.html",
    )
    tokens = (b"device_mesh", b"DeviceMesh")
    examples = (
        Example(
            'from torch.distributed.device_mesh import init_device_mesh\n'
            'mesh = init_device_mesh("cuda", (8,), mesh_dim_names=("dp",))\n',
            ('from torch.distributed.device_mesh import init_device_mesh\n'
                'import torch\n'
                '\n'
                'mesh = init_device_mesh("neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda", (8,), mesh_dim_names=("dp",))\n'),
        ),
        Example(
            "from torch.distributed.device_mesh import init_device_mesh\n\n\n"
            "def build(shape):\n    return init_device_mesh('cuda', shape)\n",
            "from torch.distributed.device_mesh import init_device_mesh\nimport torch\n\n\n"
            "def build(shape):\n    return init_device_mesh('neuron' if hasattr(torch, 'accelerator') and "
            "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == 'neuron' "
            "else 'cuda', shape)\n",
        ),
        Example(
            "import torch.distributed as dist\nmesh = dist.device_mesh.DeviceMesh(device_type='cuda', mesh=[0, 1])\n",
            ('import torch.distributed as dist\n'
                'import torch\n'
                '\n'
                "mesh = dist.device_mesh.DeviceMesh(device_type='neuron' if hasattr(torch, 'accelerator') and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == 'neuron' else 'cuda', mesh=[0, 1])\n"),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = last_name(func)
        if last not in _MESH_CALLS:
            return
        qualified = self.ctx.qualify(func)
        if not qualified or not qualified.startswith("torch.distributed."):
            return
        arg = argument(node, "device_type", 0)
        if arg is None:
            return
        value = string_value(arg.value)
        if value is None or not (value == "cuda" or value.startswith("cuda:")):
            return
        message = per_target.say(self.ctx, '`{fn}("{value}", ...)` -> `{device}`: {why}', fn=last, value=value,
                                 why=WHY[per_target.target(self.ctx)])
        if keeps_cuda_hosts(self.ctx):
            # callers on every host, the CUDA box included: the mesh gains Neuron, CUDA keeps its own
            new, imports = hosts.host_aware(self.ctx, arg.value)
            message += "; only where that device is present: this file also runs without it"
        else:
            new, imports = per_target.device(self.ctx, arg.value)
        # the mesh runs on the process group's devices: it moves with the process group, or not at all
        self.fix(arg.value, new, message, imports=imports, group=process_group_edits(self.ctx))
