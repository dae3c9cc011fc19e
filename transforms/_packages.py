"""CUDA-only packages: one table for every rule that needs to know them.

NRN903 (cuda-only-library) reports imports of them with the path forward; the ``torch.cuda``
runtime rules (NRN110...) treat code that uses one as a CUDA-only path (kept, not migrated).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from neuronize.transform import Evidence

#: The path forward for a hand-written CUDA/Triton kernel (reference F1, F2).
NKI_PATH = "port it to an NKI kernel registered with `torch_neuronx.nki_op` (check aws-neuron/nki-library first)"
NKI_PATH_KERNELS = ("port the kernels to NKI kernels registered with `torch_neuronx.nki_op` "
                    "(check aws-neuron/nki-library first)")
#: the public pages on the way forward for custom kernels (NKI), cited by the kernel rules
KERNEL_REFERENCES = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/how-to-work-with-nki.html",
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/get-started/quickstart-nki-kernel.html",
)
SDPA = "use `F.scaled_dot_product_attention` (on Neuron it lowers to an NKI flash-attention kernel)"
NEURON_TOOLS = "use `neuron-ls` / `neuron-top` / Neuron Explorer"
BF16_WEIGHTS = "load the model in bf16 (`torch_dtype=torch.bfloat16`)"


class Path(enum.Enum):
    """Where code using the package goes on Trainium."""

    STOCK_PYTORCH = "stock PyTorch"  # an op, layer or optimizer PyTorch has (or the host does it)
    NKI = "NKI"  # a kernel to port to NKI
    NONE = "none yet"  # no replacement (tools outside Python, or support still being evaluated)


@dataclass(frozen=True)
class Package:
    what: str
    instead: str
    evidence: Evidence
    verdict: str = "does not run on Trainium"
    path: Path = Path.STOCK_PYTORCH
    #: code using it is a CUDA-only path (False: it also runs elsewhere, e.g. on the CPU)
    cuda_only: bool = True
    #: NRN903 reports its imports (False: another rule owns the package)
    reported: bool = True


PACKAGES: dict[str, Package] = {
    "flash_attn": Package("FlashAttention CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "flash_attn_interface": Package("FlashAttention-3 CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "xformers": Package("xFormers CUDA/Triton kernels", SDPA, Evidence.THIRD_PARTY),
    "flashinfer": Package("FlashInfer CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "apex": Package(
        "NVIDIA Apex fused CUDA kernels",
        "use stock PyTorch (`nn.LayerNorm`/`nn.RMSNorm`, `torch.optim.AdamW`, "
        "`torch.autocast(\"neuron\", dtype=torch.bfloat16)`)",
        Evidence.INF,
    ),
    "bitsandbytes": Package(
        "CUDA kernels for 8-bit optimizers and 4/8-bit quantization",
        "use `torch.optim.AdamW` and bf16 weights",
        Evidence.INF,
    ),
    "deepspeed.ops": Package(
        "DeepSpeed ops: JIT-built CUDA kernels",
        "use `torch.optim.AdamW` and stock PyTorch layers",
        Evidence.INF,
    ),
    "deepspeed": Package(
        "DeepSpeed engine/ZeRO, built on CUDA kernels and NCCL",
        "use FSDP2 (`fully_shard`) or DDP with a `\"neuron\"` process group and `torch.optim.AdamW`",
        Evidence.INF,
        "has no documented TorchNeuron support",
    ),
    "transformer_engine": Package(
        "NVIDIA Transformer Engine: fused FP8 CUDA layers",
        "use `nn.Linear`/`nn.LayerNorm` under `torch.autocast(\"neuron\", dtype=torch.bfloat16)`",
        Evidence.INF,
    ),
    "liger_kernel": Package(
        "Liger Triton kernels",
        "use stock PyTorch (`nn.RMSNorm`, `F.cross_entropy`) or NKI kernels (aws-neuron/nki-library)",
        Evidence.INF,
    ),
    "mamba_ssm": Package("Mamba selective-scan CUDA kernels", f"use a pure-PyTorch scan or {NKI_PATH_KERNELS}",
                         Evidence.INF, path=Path.NKI),
    "causal_conv1d": Package("causal-conv1d CUDA kernel", "use `nn.Conv1d` with left padding, or "
                             + NKI_PATH_KERNELS, Evidence.INF),
    "pynvml": Package("NVML GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "py3nvml": Package("NVML GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "nvidia_smi": Package("nvidia-smi GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "GPUtil": Package("GPU introspection via nvidia-smi", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "nvitop": Package("NVML GPU monitoring", "use `neuron-top` / Neuron Explorer", Evidence.DOC, path=Path.NONE),
    "cupy": Package("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                    Evidence.INF),
    "cupyx": Package("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                     Evidence.INF),
    "pycuda": Package("PyCUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "numba.cuda": Package("Numba CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "torchao": Package(
        "TorchAO quantization / FP8 training",
        "keep bf16 or verify on your release",
        Evidence.DOC_OLD,
        "was still being evaluated for Neuron",
        path=Path.NONE,
        cuda_only=False,  # TorchAO also runs on the CPU
    ),
    "tensorrt": Package("NVIDIA TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF),
    "torch_tensorrt": Package("Torch-TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF),
    "auto_gptq": Package("AutoGPTQ CUDA quantization kernels", BF16_WEIGHTS, Evidence.INF),
    "awq": Package("AutoAWQ CUDA quantization kernels", BF16_WEIGHTS, Evidence.INF),
    "exllamav2": Package("ExLlamaV2 CUDA kernels", BF16_WEIGHTS, Evidence.INF),
    "nvidia.dali": Package("NVIDIA DALI GPU data loading", "use a CPU `DataLoader` pipeline", Evidence.INF),
    # Only CUDA-only-path markers: NRN902 (triton-kernel) reports Triton; vLLM has a Neuron
    # plugin of its own, so its import is no migration finding.
    "triton": Package("Triton GPU kernels", NKI_PATH_KERNELS, Evidence.DOC_OLD, path=Path.NKI, reported=False),
    "vllm": Package("vLLM's CUDA serving engine", "use vLLM's Neuron plugin", Evidence.THIRD_PARTY,
                    path=Path.NONE, reported=False),
    "megablocks": Package("MegaBlocks grouped-GEMM / block-sparse MoE CUDA kernels",
                          f"use a stock PyTorch MoE (batched `torch.bmm`) or {NKI_PATH_KERNELS}", Evidence.INF,
                          path=Path.NKI),
    "torchcomms": Package("torchcomms GPU communicators (NCCLX, MCCL)",
                          "use `torch.distributed` with the `\"neuron\"` process group", Evidence.INF,
                          reported=False),
}

# Longest first, so that `deepspeed.ops` wins over `deepspeed`.
REPORTED = tuple(sorted((name for name, p in PACKAGES.items() if p.reported), key=len, reverse=True))
#: Top-level packages whose use means a CUDA-only path.
CUDA_ONLY_PACKAGES = frozenset(name.split(".")[0] for name, p in PACKAGES.items() if p.cuda_only)
