"""CUDA-only packages: one table for every rule that needs to know them, and for the core (the roles
of code, the notebook's shell lines, ``neuronize explain packages``).

NRN903 (cuda-only-library) reports imports of them with the path forward; the ``torch.cuda``
runtime rules (NRN110...) treat code that uses one as a CUDA-only path (kept, not migrated).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from neuronize.types import Evidence

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
_CPM_KERNELS = "cpm_kernels int8/int4 weight-quantization kernels, compiled for CUDA at run time"
_UNQUANTIZED = "load the model in bf16 (`torch_dtype=torch.bfloat16`) without quantizing it"
SERVE_ON_NEURON = ("serve with vLLM and its Neuron plugin (vllm-neuron), or with the model's own PyTorch code "
                   "under `torch.compile(backend=\"neuron\")`")


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
    #: for a package with a common name (`kernels`): only imports of these names mean the package
    names: frozenset[str] = frozenset()
    #: its names on PyPI when they differ from the module's (`pip install nvidia-ml-py` -> pynvml)
    distributions: tuple[str, ...] = ()
    #: importing it loads its CUDA kernels (it installs and imports only with a CUDA build): a module
    #: that imports it unguarded does not import on a host without CUDA
    loads_kernels: bool = False


PACKAGES: dict[str, Package] = {
    "flash_attn": Package("FlashAttention CUDA kernels", SDPA, Evidence.THIRD_PARTY, loads_kernels=True),
    "flash_attn_interface": Package("FlashAttention-3 CUDA kernels", SDPA, Evidence.THIRD_PARTY, loads_kernels=True),
    "flash_attn_3": Package("FlashAttention-3 CUDA kernels", SDPA, Evidence.THIRD_PARTY, loads_kernels=True),
    # PyTorch's variable-length attention runs FlashAttention's CUDA kernels only
    "torch.nn.attention.varlen": Package(
        "PyTorch variable-length attention, on FlashAttention CUDA kernels",
        "pad the batch and call `F.scaled_dot_product_attention` with a mask (on Neuron it lowers to an NKI "
        "flash-attention kernel)", Evidence.INF, cuda_only=False),
    "xformers": Package("xFormers CUDA/Triton kernels", SDPA, Evidence.THIRD_PARTY),
    "flashinfer": Package("FlashInfer CUDA kernels", SDPA, Evidence.THIRD_PARTY, distributions=("flashinfer-python",)),
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
    # int8/int4 weight quantization kernels compiled at run time with NVRTC: ChatGLM's
    # quantization, and SwissArmyTransformer's `quantize`, whose package (`sat`) is otherwise
    # portable: its code is no CUDA-only path
    "cpm_kernels": Package(_CPM_KERNELS, _UNQUANTIZED, Evidence.INF),
    "sat.quantization": Package(_CPM_KERNELS, _UNQUANTIZED, Evidence.INF, cuda_only=False),
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
        loads_kernels=True,
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
    "pynvml": Package("NVML GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE,
                      distributions=("nvidia-ml-py", "nvidia-ml-py3")),
    "py3nvml": Package("NVML GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "nvidia_smi": Package("nvidia-smi GPU introspection", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "GPUtil": Package("GPU introspection via nvidia-smi", NEURON_TOOLS, Evidence.DOC, path=Path.NONE),
    "nvitop": Package("NVML GPU monitoring", "use `neuron-top` / Neuron Explorer", Evidence.DOC, path=Path.NONE),
    "cupy": Package("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                    Evidence.INF, distributions=("cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x")),
    "cupyx": Package("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                     Evidence.INF),
    "cuml": Package("RAPIDS cuML GPU machine learning", "use scikit-learn on the host (the same estimator API)",
                    Evidence.INF, distributions=("cuml-cu11", "cuml-cu12")),
    "cudf": Package("RAPIDS cuDF GPU data frames", "use pandas on the host", Evidence.INF,
                    distributions=("cudf-cu11", "cudf-cu12")),
    "pycuda": Package("PyCUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    # 3D vision and neural rendering: fused kernels with no CPU build
    "tinycudann": Package("tiny-cuda-nn fused MLP and hash-grid CUDA kernels",
                          "use `nn.Sequential` MLPs and a pure-PyTorch hash-grid encoding", Evidence.INF,
                          loads_kernels=True),
    "spconv": Package("spconv sparse convolution CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI,
                      distributions=("spconv-cu118", "spconv-cu120", "spconv-cu121")),
    "nvdiffrast": Package("nvdiffrast rasterization on NVIDIA GPUs",
                          NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "diff_gaussian_rasterization": Package("Gaussian-splatting rasterizer CUDA kernels", NKI_PATH_KERNELS,
                                           Evidence.INF, path=Path.NKI, loads_kernels=True),
    "gsplat": Package("gsplat Gaussian-splatting CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    # DCNv2 (CharlesShang/DCNv2 and its forks, built by each detection repository's `make.sh`):
    # deformable convolution v2 as a compiled extension; torchvision has the same operator
    **dict.fromkeys(("dcn_v2", "DCNv2"), Package(
        "DCNv2 deformable convolution, a compiled CUDA extension",
        "use `torchvision.ops.DeformConv2d` (with `mask=`, DCNv2's modulated deformable convolution)",
        Evidence.INF)),
    "cubvh": Package("cubvh BVH ray and distance queries in CUDA kernels",
                     "query distances and rays on the host (`trimesh` proximity, `pysdf`)", Evidence.INF),
    "numba.cuda": Package("Numba CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "torchao": Package(
        "TorchAO quantization / FP8 training",
        "keep bf16 or verify on your release",
        Evidence.DOC_OLD,
        "was still being evaluated for Neuron",
        path=Path.NONE,
        cuda_only=False,  # TorchAO also runs on the CPU
    ),
    "tensorrt": Package("NVIDIA TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF, loads_kernels=True),
    "torch_tensorrt": Package("Torch-TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF,
                              loads_kernels=True),
    "auto_gptq": Package("AutoGPTQ CUDA quantization kernels", BF16_WEIGHTS, Evidence.INF),
    "awq": Package("AutoAWQ CUDA quantization kernels", BF16_WEIGHTS, Evidence.INF, distributions=("autoawq",)),
    "exllamav2": Package("ExLlamaV2 CUDA kernels", BF16_WEIGHTS, Evidence.INF),
    "exllamav3": Package("ExLlamaV3 CUDA kernels", BF16_WEIGHTS, Evidence.INF, loads_kernels=True),
    "unsloth": Package("Unsloth fine-tuning on its own Triton kernels (GPUs only), 4-bit models through bitsandbytes",
                       "fine-tune with `transformers` and `peft` on a bf16 model", Evidence.INF),
    "nvidia.dali": Package("NVIDIA DALI GPU data loading", "use a CPU `DataLoader` pipeline", Evidence.INF),
    "deep_ep": Package("DeepEP expert-parallel all-to-all CUDA/NVSHMEM kernels",
                       "use `torch.distributed.all_to_all_single` over the `\"neuron\"` process group",
                       Evidence.INF),
    "fla": Package("flash-linear-attention Triton kernels",
                   f"use the model's pure-PyTorch recurrence, or {NKI_PATH_KERNELS}", Evidence.INF, path=Path.NKI,
                   distributions=("flash-linear-attention", "fla-core")),
    "helion": Package("Helion kernels (compiled to Triton)", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "kernels": Package(
        "Hugging Face kernel hub (prebuilt CUDA kernels downloaded at run time)",
        "use the stock PyTorch layer the hub kernel replaces (skip `kernelize` / `get_kernel` on Neuron)",
        Evidence.INF,
        names=frozenset({"get_kernel", "get_local_kernel", "get_locked_kernel", "load_kernel", "has_kernel",
                         "kernelize", "use_kernel_forward_from_hub", "use_kernel_mapping", "register_kernel_mapping",
                         "LayerRepository", "LocalLayerRepository", "Mode"}),
        cuda_only=False,  # a common name: a project's own `kernels` module is no CUDA-only path
    ),
    # A submodule of a package that also runs elsewhere (vllm, torchao, torch) is `cuda_only=False`:
    # CUDA_ONLY_PACKAGES holds top-level names, and those packages are no CUDA-only path as a whole.
    "vllm._custom_ops": Package("vLLM's compiled CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI,
                                cuda_only=False),
    "vllm._C": Package("vLLM's compiled CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI,
                       cuda_only=False),
    **{module: Package("vLLM's GPU worker / FlashAttention backend internals",
                       "use vLLM's Neuron plugin (vllm-neuron), which brings its own worker and attention",
                       Evidence.INF, path=Path.NONE, cuda_only=False)
       for module in ("vllm.v1.worker.gpu_model_runner", "vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu",
                      "vllm.v1.attention.backends.flash_attn")},
    "torchao.float8": Package("TorchAO FP8 training (`torch._scaled_mm` CUDA kernels)",
                              "train in bf16 (`torch.autocast(\"neuron\", dtype=torch.bfloat16)`)",
                              Evidence.THIRD_PARTY, path=Path.NONE, cuda_only=False),
    "torchao.prototype.mx_formats": Package("TorchAO MX formats (CUDA kernels)", "train in bf16",
                                            Evidence.THIRD_PARTY, path=Path.NONE, cuda_only=False),
    "torchao.ops": Package("TorchAO compiled CUDA kernels (int4/marlin/fp6 GEMMs)", NKI_PATH_KERNELS,
                           Evidence.INF, path=Path.NKI, cuda_only=False),
    "torchao.kernel": Package("TorchAO Triton kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI,
                              cuda_only=False),
    "megablocks": Package("MegaBlocks MoE Triton/CUDA kernels",
                          "use stock PyTorch MoE layers with `torch._grouped_mm`, or " + NKI_PATH_KERNELS,
                          Evidence.THIRD_PARTY, path=Path.NKI),
    "grouped_gemm": Package("CUTLASS grouped GEMM CUDA kernels", "use `torch._grouped_mm`", Evidence.THIRD_PARTY),
    "fbgemm_gpu": Package("FBGEMM GPU kernels (embedding bags, quantized GEMMs)",
                          "use `nn.EmbeddingBag` and bf16 GEMMs, or " + NKI_PATH_KERNELS, Evidence.INF),
    "sgl_kernel": Package("SGLang CUDA kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI),
    "cutlass": Package("NVIDIA CUTLASS Python DSL (CuTe) kernels", NKI_PATH_KERNELS, Evidence.INF, path=Path.NKI,
                       distributions=("nvidia-cutlass-dsl", "nvidia-cutlass")),
    "torch.distributed._symmetric_memory": Package(
        "CUDA symmetric memory (NVSHMEM / CUDA IPC buffers)",
        "use the collectives of `torch.distributed` over the `\"neuron\"` process group",
        Evidence.INF,
        path=Path.NONE,
        cuda_only=False,
    ),
    # Only a CUDA-only-path marker: NRN902 (triton-kernel) reports Triton.
    "triton": Package("Triton GPU kernels", NKI_PATH_KERNELS, Evidence.DOC_OLD, path=Path.NKI, reported=False),
    "torchcomms": Package("torchcomms GPU communicators (NCCLX, MCCL)",
                          "use `torch.distributed` with the `\"neuron\"` process group", Evidence.INF,
                          reported=False),
    # Serving engines: each owns its device and kernels, so the way forward is per engine.
    "vllm": Package("vLLM serving engine", "install vLLM's Neuron plugin (vllm-neuron) and check that it "
                    "supports the model", Evidence.THIRD_PARTY, "runs its CUDA engine unless its Neuron plugin "
                    "is installed", path=Path.NONE, cuda_only=False),
    **{module: Package(f"{what} serving engine, built on CUDA kernels", SERVE_ON_NEURON, Evidence.INF, path=Path.NONE)
       for module, what in (("sglang", "SGLang"), ("lightllm", "LightLLM"), ("tensorrt_llm", "TensorRT-LLM"),
                            ("exllama", "ExLlama"))},
}

_INT4 = "keep the weights in bf16 (no int4 weight-only GEMM kernel on Neuron)"
_ATTENTION = "call `F.scaled_dot_product_attention`, which picks the device's kernel"
#: aten ops that only GPU builds implement (stock PyTorch registers no CPU kernel for them, and
#: TorchNeuron none): calling one directly ties the code to CUDA. Op -> the way forward.
CUDA_ONLY_ATEN_OPS: dict[str, str] = {
    "_weight_int4pack_mm": _INT4,
    "_convert_weight_to_int4pack": _INT4,
    "_cslt_sparse_mm": "use a dense `torch.mm` (cuSPARSELt 2:4 sparsity is NVIDIA-only)",
    "_cslt_compress": "keep the weight dense (cuSPARSELt 2:4 sparsity is NVIDIA-only)",
    "_mixed_dtypes_linear": "use `F.linear` on bf16 weights",
    "_flash_attention_forward": _ATTENTION,
    "_flash_attention_backward": _ATTENTION,
    "_efficient_attention_forward": _ATTENTION,
    "_efficient_attention_backward": _ATTENTION,
    "_scaled_dot_product_flash_attention": _ATTENTION,
    "_scaled_dot_product_efficient_attention": _ATTENTION,
    "_scaled_dot_product_cudnn_attention": _ATTENTION,
}

# Longest first, so that `deepspeed.ops` wins over `deepspeed`.
REPORTED = tuple(sorted((name for name, p in PACKAGES.items() if p.reported), key=len, reverse=True))
#: Top-level packages whose use means a CUDA-only path.
CUDA_ONLY_PACKAGES = frozenset(name.split(".")[0] for name, p in PACKAGES.items() if p.cuda_only)


#: a compiled CUDA extension's module name by convention (``CUDAExtension(name="..._cuda")``)
_EXTENSION_NAME = re.compile(r"^\w+_cuda(?:_kernels?|_ext|_lib)?$")


def is_cuda_extension_module(module: str) -> bool:
    """``selective_scan_cuda``, ``fused_layer_norm_cuda``, ``xentropy_cuda_lib``: a top-level module
    named ``*_cuda`` (``_kernel(s)``, ``_ext``, ``_lib``) is by convention a compiled CUDA extension."""
    return _EXTENSION_NAME.match(module.split(".")[0]) is not None


def imported_package(module: str, names: tuple[str, ...] = ()) -> str | None:
    """The table entry an import of ``module`` (``names`` imported from it) is a use of, or None.

    Longest entry first (``deepspeed.ops`` before ``deepspeed``); a package with a common name
    counts only when one of its API names is imported (``from kernels import get_kernel``), so a
    project's own ``kernels/`` folder is not mistaken for it."""
    modules = (module, *(f"{module}.{name}" for name in names))  # `from vllm import _custom_ops`
    for name in REPORTED:
        if any(m == name or m.startswith(name + ".") for m in modules):
            wanted = PACKAGES[name].names
            if wanted and not set(names) & wanted:
                return None
            return name
    if module == "numba" and "cuda" in names:
        return "numba.cuda"
    return None


def _normalized(name: str) -> str:
    """A PyPI project name as PEP 503 compares them (`Flash_Attn` == `flash-attn`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_package(distribution: str) -> str | None:
    """The table entry a PyPI project installs (`flash-attn` -> flash_attn, `nvidia-ml-py` ->
    pynvml), or None. Entries that are submodules (`deepspeed.ops`) have no project of their own."""
    wanted = _normalized(distribution)
    for name, package in PACKAGES.items():
        if not package.reported or "." in name:
            continue
        if wanted == _normalized(name) or wanted in map(_normalized, package.distributions):
            return name
    return None


def table_text() -> str:
    """The table as text, for ``neuronize explain packages``: grouped by the path forward."""
    lines = ["CUDA-only packages (neuronize reports their imports as NRN903 findings)", ""]
    for path in Path:
        group = [(name, p) for name, p in sorted(PACKAGES.items()) if p.path is path]
        lines.append(f"Path forward: {path.value}")
        for name, p in group:
            note = "" if p.reported else " (reported by another rule, or not a migration finding)"
            lines.append(f"  {name}: {p.what} ({p.evidence.value}){note}")
            lines.append(f"      {p.verdict}; {p.instead}")
        lines.append("")
    lines.append("Also: any top-level module named `*_cuda` (a compiled CUDA extension): "
                 + NKI_PATH_KERNELS + ".")
    return "\n".join(lines) + "\n"


def module_matches(module: str, packages: Iterable[str]) -> str | None:
    """The entry of ``packages`` that ``module`` is, or is a submodule of."""
    for package in packages:
        if module == package or module.startswith(package + "."):
            return package
    return None
