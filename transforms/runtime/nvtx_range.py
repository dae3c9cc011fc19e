"""NRN353: NVTX ranges and CUDA profiler hooks (``torch.cuda.nvtx.*``, ``emit_nvtx``, ``torch.cuda.profiler``)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_settings import CudaOnlySettings

_NVTX = "an NVTX annotation for NVIDIA Nsight"
_PROFILER = "it starts or stops the CUDA profiler (Nsight / nvprof)"
_ACTIVITIES = frozenset({"torch.profiler.ProfilerActivity.CUDA", "torch.autograd.ProfilerActivity.CUDA",
                         "torch._C._profiler.ProfilerActivity.CUDA"})


class NvtxRange(CudaOnlySettings):
    """Finds NVTX profiling annotations and CUDA profiler hooks, which have no Neuron equivalent.

    What it does:
        On the `neuron` target keeps them for the CUDA hosts the file still runs on, under `if not
        <the accelerator is Neuron>:`. Under the other targets, deletes the statements
        `torch.cuda.nvtx.range_push(...)`, `range_pop()`, `mark(...)`,
        `range_start(...)`, `range_end(...)` and `torch.cuda.profiler.start()` / `stop()` /
        `init(...)`, keeping comments and inserting `pass` where a block would be empty, and
        unwraps `with torch.cuda.nvtx.range(...):`, `with torch.autograd.profiler.emit_nvtx():`
        and `with torch.cuda.profiler.profile():` blocks (in a multi-item `with`, only that item
        goes). Drops `from torch.cuda import nvtx` once unused. Reports these functions used as
        values or decorators (`rid = torch.cuda.nvtx.range_start("x")`), which cannot be deleted.
        Reports `ProfilerActivity.CUDA` (in `activities=[...]` or anywhere), which records no
        Neuron activity.

    Why on TorchNeuron:
        NVTX and the CUDA profiler API talk to NVIDIA's tools. On Neuron, profile with
        `torch.profiler` (`ProfilerActivity.PrivateUse1`) and Neuron Explorer.

    Example:
        torch.cuda.nvtx.range_push("forward")
        loss = model(x)
        torch.cuda.nvtx.range_pop()

    Use instead:
        with torch.profiler.record_function("forward"):
            loss = model(x)

    Fix safety:
        Unsafe: that no Neuron build provides NVTX is third-party evidence; the annotations only
        matter to a profiler, so the program's results do not change.

    Evidence:
        3P: a platform layer logs them as no-ops. DOC: the Neuron Explorer profiling guide for the
        profiler alternative.
    """

    id = "NRN353"
    name = "nvtx-range"
    safety = Safety.UNSAFE
    evidence = Evidence.THIRD_PARTY
    section = "compile"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-explorer/how-to-profile-pytorch.html",)
    tokens = (b"nvtx", b"cuda", b"CUDA")
    examples = (
        Example(
            'import torch\ntorch.cuda.nvtx.range_push("fwd")\ny = model(x)\ntorch.cuda.nvtx.range_pop()\n',
            ('import torch\n'
                'if not (hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"):\n'
                '    torch.cuda.nvtx.range_push("fwd")\n'
                'y = model(x)\n'
                'if not (hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"):\n'
                '    torch.cuda.nvtx.range_pop()\n'),
        ),
        Example(
            'import torch\nwith torch.cuda.nvtx.range("step"):\n    step()\n',
            "import torch\nstep()\n",
        ),
    )

    removable_calls = {
        "torch.cuda.nvtx.range_push": _NVTX,
        "torch.cuda.nvtx.range_pop": _NVTX,
        "torch.cuda.nvtx.mark": _NVTX,
        "torch.cuda.nvtx.range_start": _NVTX,
        "torch.cuda.nvtx.range_end": _NVTX,
        "torch.cuda.profiler.start": _PROFILER,
        "torch.cuda.profiler.stop": _PROFILER,
        "torch.cuda.profiler.init": _PROFILER,
    }
    contexts = {
        "torch.cuda.nvtx.range": _NVTX,
        "torch.autograd.profiler.emit_nvtx": "it emits NVTX ranges for every autograd op",
        "torch.cuda.profiler.profile": _PROFILER,
    }
    modules = ("torch.cuda.nvtx", "torch.cuda.profiler")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "CUDA" and self.ctx.qualify(node) in _ACTIVITIES:
            self.report(node, "`ProfilerActivity.CUDA` traces CUDA kernels only; on Neuron add "
                        "`ProfilerActivity.PrivateUse1` with a Neuron Explorer `NeuronConfig`, and keep CUDA where GPU "
                        "hosts run (`torch.profiler.supported_activities()` tells what a host has)", evidence=Evidence.DOC)
            return
        super().visit_Attribute(node)
    why = "no Neuron equivalent (profile with `torch.profiler` and Neuron Explorer)"
