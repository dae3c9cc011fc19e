"""NRN352: ``with sdpa_kernel(...)`` / ``with torch.backends.cuda.sdp_kernel(...)`` attention-kernel contexts."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety
from neuronize.types import Target
from neuronize.transforms._helpers.cuda_settings import CudaOnlySettings

#: words in the names of functions that stand for one attention backend
BACKEND_WORDS = ("flash", "efficient", "cudnn", "math", "backend")

_WHAT = "it picks which CUDA attention kernel (flash, memory-efficient, math, cuDNN) SDPA may use"


class SdpaKernelContext(CudaOnlySettings):
    """Finds `with sdpa_kernel(...)` blocks that choose CUDA attention kernels for `scaled_dot_product_attention`.

    What it does:
        On the `neuron` target, leaves the `with torch.nn.attention.sdpa_kernel(...):` and older
        `with torch.backends.cuda.sdp_kernel(...):` blocks as they are, with no finding: the GPU
        box still runs the migrated file with the kernel its authors chose (the math kernel pinned
        for exactness, flash for speed), and the context only sets flags that the Neuron kernel
        ignores. Under the other targets, unwraps them: the body stays (dedented), the context
        goes, comments on the `with` line move above the body. In a multi-item `with` only that
        item is dropped. The `sdpa_kernel` / `SDPBackend` imports go once unused.
        Reported, not changed: an explicit `SDPBackend.X` choice in a function that is one entry of
        an attention-backend registry (decorated with a `register...` call, or named after a
        backend: `_native_flash`, `math_attention`), where the choice is the point; a bound context value (`as ctx`), `async with`, comments the
        unwrapping would lose, and the context manager used as a decorator or value.

    Why on TorchNeuron:
        `F.scaled_dot_product_attention` dispatches to a Neuron kernel; the CUDA backend choice
        (`SDPBackend.FLASH_ATTENTION`, `EFFICIENT_ATTENTION`, `CUDNN_ATTENTION`) does not apply.

    Example:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    Use instead:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    Fix safety:
        Unsafe: that the Neuron dispatch ignores the selection is an inference; code that forced
        the math kernel for exactness (double backward, tests) should be checked.

    Evidence:
        INF: on Neuron, SDPA lowers to a Neuron kernel whatever the CUDA backend context says.
    """

    id = "NRN352"
    name = "sdpa-kernel-context"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "compile"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",)
    tokens = (b"sdpa_kernel", b"sdp_kernel")
    examples = (
        Example(
            "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
            "import torch.nn.functional as F\n\n"
            "def attend(q, k, v):\n"
            "    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):\n"
            "        return F.scaled_dot_product_attention(q, k, v)\n",
            "import torch.nn.functional as F\n\n"
            "def attend(q, k, v):\n"
            "    return F.scaled_dot_product_attention(q, k, v)\n",
            target=Target.CPU,
        ),
        # the neuron target keeps the CUDA box's kernel choice, which Neuron ignores
        Example(
            "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
            "import torch.nn.functional as F\n\n"
            "def attend(q, k, v):\n"
            "    with sdpa_kernel(SDPBackend.MATH):\n"
            "        return F.scaled_dot_product_attention(q, k, v)\n",
            finds=False,
        ),
    )

    def keep_context(self, items: list[cst.WithItem]) -> str | None:
        """An explicit kernel (``SDPBackend.FLASH_ATTENTION``) in a function that is one entry of
        an attention-backend registry: the choice is what the entry means."""
        explicit = all(isinstance(item.item, cst.Call) and item.item.args and all(
            "SDPBackend." in self.ctx.module.code_for_node(a.value) for a in item.item.args) for item in items)
        if not explicit:
            return None
        for anc in self.ctx.ancestors():
            if isinstance(anc, cst.FunctionDef):
                decorators = " ".join(self.ctx.module.code_for_node(d.decorator) for d in anc.decorators).lower()
                named = anc.name.value.lower()
                if "register" in decorators or any(word in named for word in BACKEND_WORDS):
                    return (f"`{anc.name.value}` is one entry of an attention-backend registry: its explicit "
                            "SDPA kernel is what the entry means; left as is (give Neuron an entry of its own)")
                return None
        return None

    contexts = {
        "torch.nn.attention.sdpa_kernel": _WHAT,
        "torch.backends.cuda.sdp_kernel": _WHAT,
    }
    modules = ("torch.nn.attention.SDPBackend",)
    why = "on Neuron SDPA lowers to a Neuron kernel"
    #: the context only sets SDPA's CUDA backend flags, which run anywhere and Neuron's kernel ignores
    harmless_elsewhere = True
