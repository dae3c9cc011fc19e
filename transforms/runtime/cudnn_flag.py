"""NRN350: ``torch.backends.cudnn.*`` settings (benchmark, deterministic, enabled, allow_tf32)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_settings import CudaOnlySettings


class CudnnFlag(CudaOnlySettings):
    """Finds cuDNN settings (`torch.backends.cudnn.benchmark = True` and friends), which mean nothing on Neuron.

    What it does:
        On the `neuron` target, reports as kept for CUDA hosts the assignments to
        `torch.backends.cudnn.<setting>`: the GPU box still runs the migrated file, and the flags
        are harmless elsewhere. Under the other targets, deletes them (`benchmark`, `deterministic`,
        `enabled`, `allow_tf32`, `benchmark_limit`, and the rest of the namespace), in any
        spelling (`from torch.backends import cudnn`, `import torch.backends.cudnn as cudnn`),
        with its own comments (the one on its line, and those right above it when nothing else
        follows them), inserting `pass` where a block would be empty; drops the `cudnn`
        import once unused. Unwraps `with torch.backends.cudnn.flags(...):` blocks (in a
        multi-item `with`, only that item goes); on the `neuron` target they stay, with no
        finding: the block is code Neuron runs too, and the flags are harmless there. Reports reads of these flags (`if
        torch.backends.cudnn.benchmark:`), which cannot be deleted.

    Why on TorchNeuron:
        cuDNN is NVIDIA's library; no Neuron code path reads these flags. They are harmless plain
        attributes on a Neuron host, but they suggest tuning that does not happen.

    Example:
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True

    Use instead:
        torch.use_deterministic_algorithms(True)  # if reproducibility was the point

    Fix safety:
        Unsafe: that no Neuron path reads them is an inference. A deleted `deterministic = True`
        does not carry its intent over: use `torch.use_deterministic_algorithms(True)`, which
        TorchNeuron honours (best-practices guide).

    Evidence:
        INF: cuDNN is NVIDIA's library; no Neuron code path reads these flags.
    """

    id = "NRN350"
    name = "cudnn-flag"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/best-practices-pytorch-neuron.html",
    )
    tokens = (b"cudnn",)
    examples = (
        Example(
            "import torch\ntorch.backends.cudnn.benchmark = True  # autotune convs\nmodel = Net()\n",
        ),
        Example(
            "import torch\nif args.fast:\n    torch.backends.cudnn.benchmark = True\n",
        ),
        Example("import torch\nprint(torch.backends.cudnn.benchmark)\n"),
        Example('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
                "torch.backends.cudnn.benchmark = True\n"),
    )

    assign_prefixes = ("torch.backends.cudnn.",)
    read_attrs = frozenset({"benchmark", "deterministic", "enabled", "allow_tf32", "benchmark_limit"})
    contexts = {"torch.backends.cudnn.flags": "it sets cuDNN flags for the block"}
    modules = ("torch.backends.cudnn",)
    harmless_elsewhere = True
    why = "a cuDNN setting, meaningless on {non_cuda}"

    def extra_note(self, qualified: str, node: cst.CSTNode) -> str:
        if qualified.endswith(".deterministic"):
            return "; for reproducible runs use `torch.use_deterministic_algorithms(True)`"
        return ""
