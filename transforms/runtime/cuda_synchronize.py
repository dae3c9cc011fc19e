"""NRN111: ``torch.cuda.synchronize()`` -> ``torch.accelerator.synchronize()``."""

from __future__ import annotations

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_runtime import CudaRef, _CudaApiRule, spelled, timing_group

TARGET = "torch.accelerator.synchronize"


class CudaSynchronize(_CudaApiRule):
    """Finds `torch.cuda.synchronize`, called or used as a function reference.

    What it does:
        Rewrites `torch.cuda.synchronize(...)` to `torch.accelerator.synchronize(...)` (arguments
        kept), in every spelling: `T.cuda.synchronize()`, `cuda.synchronize()` after
        `from torch import cuda`, `synchronize()` after `from torch.cuda import synchronize`,
        and references that are not calls (`sync = torch.cuda.synchronize if timed else noop`).
        An import of `torch.cuda` left unused by the fix is removed. The value of a
        `{"cuda": torch.cuda.synchronize}` table entry is reported instead: add a `"neuron"`
        entry beside it. Under a comparison with `"cuda"` (`if device.type == "cuda":`, `sync =
        torch.cuda.synchronize if device_type == "cuda" else (lambda: None)`) the rewrite is made
        only together with NRN103's widening of that test to `("cuda", "neuron")`: behind a test
        Neuron never passes it would change nothing on Neuron. Where the test stays CUDA's (the
        `else:` of `device != "cuda"`, a guard around CUDA-only code) it is reported instead.
        `torch.accelerator` is new in torch 2.6: in a project whose requirements admit an older
        torch (no lower bound of at least 2.6, or no torch declared) the call is written
        `getattr(torch, "accelerator", torch.cuda).synchronize()`, which is `torch.cuda`'s there.

    Why on TorchNeuron:
        Neuron execution is asynchronous like CUDA's: timers and memory statistics need a
        synchronisation point, and `torch.cuda.synchronize()` raises on a machine without CUDA.
        `torch.accelerator.synchronize()` waits for the Neuron device (and still works on CUDA).
        It is preferred over the equally documented `torch.neuron.synchronize()` because it keeps
        the script device-agnostic and matches the `torch.accelerator` spelling NRN110 uses.

    Example:
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0

    Use instead:
        torch.accelerator.synchronize()
        elapsed = time.perf_counter() - t0

    Fix safety:
        Safe: both functions block until queued work on the current device is done and take the
        same optional device argument, which `torch.accelerator.synchronize` takes by position
        only: `device=d` becomes `d` (the keyword raises `TypeError` there). A device argument that names CUDA (`"cuda:0"`) is left
        to the device-placement rules.

    Evidence:
        DOC: the memory-profiling guide's `torch.neuron.synchronize()` and
        `torch.accelerator.synchronize()` works unchanged on Neuron.
    """

    id = "NRN111"
    targets = per_target.ALL
    name = "cuda-synchronize"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "device"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/memory-profiling-guide.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html",
    )
    tokens = (b"cuda",)
    FUNCTIONS = frozenset({"synchronize"})
    examples = (
        Example("import torch\ntorch.cuda.synchronize()\n", "import torch\ntorch.accelerator.synchronize()\n"),
        Example(
            "import torch as T\nsync = T.cuda.synchronize if timed else (lambda: None)\n",
            "import torch as T\nsync = T.accelerator.synchronize if timed else (lambda: None)\n",
        ),
        Example(
            "from torch.cuda import synchronize\nsynchronize()\n",
            "import torch\n\ntorch.accelerator.synchronize()\n",
        ),
        Example("import torch\nSYNC = {\"cuda\": torch.cuda.synchronize}\n", None),
        Example("import torch\ntorch.cuda.synchronize()\n", "import torch\ntorch.cpu.synchronize()\n", target=per_target.CPU),
        # CuPy's own CUDA runtime, not PyTorch's (cuda-only-library reports the import)
        Example("import cupy\ncupy.cuda.Stream.null.synchronize()\n", finds=False),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return TARGET

    def on_ref(self, ref: CudaRef) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            # torch.accelerator.synchronize() raises without an accelerator: use the device module
            # (torch.cuda / torch.neuron, or torch.cpu on a CPU-only machine)
            portable = ("torch.cpu.synchronize" if per_target.target(self.ctx) == per_target.CPU
                        else "torch.get_device_module().synchronize")
            shown = f"`{portable}()`" if ref.call is not None else f"`{portable}`"
            self.rewrite(ref, portable, f"{spelled(ref)} -> {shown}: works with or without an accelerator")
            return
        written = 'getattr(torch, "accelerator", torch.cuda).synchronize' if self.ctx.options.old_torch else TARGET
        shown = f"`{written}()`" if ref.call is not None else f"`{written}`"
        if ref.call is not None and any(a.keyword is not None and a.keyword.value == "device" for a in ref.call.args):
            # torch.accelerator.synchronize(device=None, /): `rewrite` passes the device by position
            self.rewrite(ref, TARGET, f"{spelled(ref)} -> {shown}, the device passed by position (it takes no "
                         "`device=`)", any_torch=True)
            return
        older = " (`torch.cuda`'s on a torch before 2.6, which the project admits)" if self.ctx.options.old_torch else ""
        self.rewrite(ref, TARGET, f"{spelled(ref)} -> {shown}{older}", any_torch=True, group=timing_group(self.ctx))
