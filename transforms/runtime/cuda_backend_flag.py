"""NRN351: ``torch.backends.cuda.*`` settings (TF32 matmul, reduced-precision reductions, SDPA kernel switches)."""

from __future__ import annotations

from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_settings import CudaOnlySettings

_SDP = "it enables or disables one of CUDA's attention kernels"


class CudaBackendFlag(CudaOnlySettings):
    """Finds CUDA matmul and attention-kernel settings (`torch.backends.cuda.*`), which mean nothing on Neuron.

    What it does:
        On the `neuron` target, reports as kept for CUDA hosts the assignments to
        `torch.backends.cuda.<setting>` (`matmul.allow_tf32`,
        `matmul.allow_bf16_reduced_precision_reduction`,
        `matmul.allow_fp16_reduced_precision_reduction`, `matmul.fp32_precision` ...) and the
        statements `torch.backends.cuda.enable_flash_sdp(...)`, `enable_mem_efficient_sdp(...)`,
        `enable_math_sdp(...)`, `enable_cudnn_sdp(...)`, `preferred_linalg_library(...)` and
        `preferred_blas_library(...)`, keeping comments and inserting `pass` where a block would be
        empty, under the other targets. The GPU box still runs the migrated file on the `neuron`
        target (TF32 stays on there), and the settings are harmless elsewhere. Reports reads of
        these settings and calls used as values, which cannot be deleted. Also reports
        `torch.set_float32_matmul_precision(...)` and leaves it: it is harmless, and on CPU it still
        means something.
        `with torch.backends.cuda.sdp_kernel(...)` belongs to NRN352.

    Why on TorchNeuron:
        These switches choose NVIDIA kernels (TF32 tensor-core matmuls, flash / memory-efficient /
        cuDNN attention). On Neuron, precision follows dtypes, autocast and compiler flags
        (`NEURON_CC_FLAGS`, e.g. `--auto-cast`), and attention lowers to Neuron kernels.

    Example:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cuda.enable_flash_sdp(True)

    Use instead:
        # nothing: use bf16 dtypes or autocast(device_type="neuron") for lower-precision matmuls

    Fix safety:
        Unsafe: that no Neuron path reads them is an inference.

    Evidence:
        INF: the CUDA backend settings have no Neuron reader; `set_float32_matmul_precision` is
        INF/3P.
    """

    id = "NRN351"
    name = "cuda-backend-flag"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "compile"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",)
    tokens = (b"backends", b"set_float32_matmul_precision")
    examples = (
        Example(
            "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cuda.enable_flash_sdp(True)\n"
            "x = 1\n",
        ),
        Example('import torch\ntorch.set_float32_matmul_precision("high")\n'),
        Example('import torch\nif torch.cuda.is_available():\n    device = "cuda"\nelse:\n    device = "cpu"\n'
                "torch.backends.cuda.matmul.allow_tf32 = True\n"),
    )

    assign_prefixes = ("torch.backends.cuda.",)
    read_attrs = frozenset({
        "allow_tf32", "allow_bf16_reduced_precision_reduction", "allow_fp16_reduced_precision_reduction",
        "fp32_precision",
    })
    removable_calls = {
        "torch.backends.cuda.enable_flash_sdp": _SDP,
        "torch.backends.cuda.enable_mem_efficient_sdp": _SDP,
        "torch.backends.cuda.enable_math_sdp": _SDP,
        "torch.backends.cuda.enable_cudnn_sdp": _SDP,
        "torch.backends.cuda.preferred_linalg_library": "it picks cuSOLVER or MAGMA",
        "torch.backends.cuda.preferred_blas_library": "it picks cuBLAS or cuBLASLt",
    }
    report_calls = {
        "torch.set_float32_matmul_precision": (
            "`torch.set_float32_matmul_precision(...)` has no documented effect on Neuron (on NVIDIA GPUs it "
            "enables TF32): left as is; Neuron matmul precision follows dtypes, autocast and `NEURON_CC_FLAGS`"
        ),
    }
    modules = ("torch.backends.cuda.matmul",)
    harmless_elsewhere = True
    why = "a CUDA backend setting, meaningless on {non_cuda}"
