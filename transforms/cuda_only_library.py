"""NRN903: imports of CUDA-only libraries (flash_attn, xformers, apex, bitsandbytes, ...)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._cannot_migrate import (
    NKI_PATH_KERNELS,
    classify_import,
    code,
    imported_modules,
    is_false_literal,
    module_matches,
)
from neuronize.transforms._helpers import argument, string_value

SDPA = "use `F.scaled_dot_product_attention` (on Neuron it lowers to an NKI flash-attention kernel)"


@dataclass(frozen=True)
class Library:
    what: str
    instead: str
    evidence: Evidence
    verdict: str = "does not run on Trainium"


LIBRARIES: dict[str, Library] = {
    "flash_attn": Library("FlashAttention CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "flash_attn_interface": Library("FlashAttention-3 CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "xformers": Library("xFormers CUDA/Triton kernels", SDPA, Evidence.THIRD_PARTY),
    "flashinfer": Library("FlashInfer CUDA kernels", SDPA, Evidence.THIRD_PARTY),
    "apex": Library(
        "NVIDIA Apex fused CUDA kernels",
        "use stock PyTorch (`nn.LayerNorm`/`nn.RMSNorm`, `torch.optim.AdamW`, "
        "`torch.autocast(\"neuron\", dtype=torch.bfloat16)`)",
        Evidence.INF,
    ),
    "bitsandbytes": Library(
        "CUDA kernels for 8-bit optimizers and 4/8-bit quantization",
        "use `torch.optim.AdamW` and bf16 weights",
        Evidence.INF,
    ),
    "deepspeed.ops": Library(
        "DeepSpeed ops: JIT-built CUDA kernels",
        "use `torch.optim.AdamW` and stock PyTorch layers",
        Evidence.INF,
    ),
    "deepspeed": Library(
        "DeepSpeed engine/ZeRO, built on CUDA kernels and NCCL",
        "use FSDP2 (`fully_shard`) or DDP with a `\"neuron\"` process group and `torch.optim.AdamW`",
        Evidence.INF,
        "has no documented TorchNeuron support",
    ),
    "transformer_engine": Library(
        "NVIDIA Transformer Engine: fused FP8 CUDA layers",
        "use `nn.Linear`/`nn.LayerNorm` under `torch.autocast(\"neuron\", dtype=torch.bfloat16)`",
        Evidence.INF,
    ),
    "liger_kernel": Library(
        "Liger Triton kernels",
        "use stock PyTorch (`nn.RMSNorm`, `F.cross_entropy`) or NKI kernels (aws-neuron/nki-library)",
        Evidence.INF,
    ),
    "mamba_ssm": Library("Mamba selective-scan CUDA kernels", f"use a pure-PyTorch scan or {NKI_PATH_KERNELS}",
                         Evidence.INF),
    "causal_conv1d": Library("causal-conv1d CUDA kernel", "use `nn.Conv1d` with left padding, or "
                             + NKI_PATH_KERNELS, Evidence.INF),
    "pynvml": Library("NVML GPU introspection", "use `neuron-ls` / `neuron-top` / Neuron Explorer",
                      Evidence.DOC),
    "py3nvml": Library("NVML GPU introspection", "use `neuron-ls` / `neuron-top` / Neuron Explorer",
                       Evidence.DOC),
    "nvidia_smi": Library("nvidia-smi GPU introspection", "use `neuron-ls` / `neuron-top` / Neuron Explorer",
                          Evidence.DOC),
    "GPUtil": Library("GPU introspection via nvidia-smi", "use `neuron-ls` / `neuron-top` / Neuron Explorer",
                      Evidence.DOC),
    "nvitop": Library("NVML GPU monitoring", "use `neuron-top` / Neuron Explorer", Evidence.DOC),
    "cupy": Library("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                    Evidence.INF),
    "cupyx": Library("CuPy CUDA arrays", "use torch ops on the `neuron` device, or NumPy on the host",
                     Evidence.INF),
    "pycuda": Library("PyCUDA kernels", NKI_PATH_KERNELS, Evidence.INF),
    "numba.cuda": Library("Numba CUDA kernels", NKI_PATH_KERNELS, Evidence.INF),
    "torchao": Library(
        "TorchAO quantization / FP8 training",
        "keep bf16 or verify on your release",
        Evidence.DOC_OLD,
        "was still being evaluated for Neuron",
    ),
    "tensorrt": Library("NVIDIA TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF),
    "torch_tensorrt": Library("Torch-TensorRT", "use `torch.compile(backend=\"neuron\")`", Evidence.INF),
    "auto_gptq": Library("AutoGPTQ CUDA quantization kernels", "load the model in bf16 (`torch_dtype=torch.bfloat16`)",
                         Evidence.INF),
    "awq": Library("AutoAWQ CUDA quantization kernels", "load the model in bf16 (`torch_dtype=torch.bfloat16`)",
                   Evidence.INF),
    "exllamav2": Library("ExLlamaV2 CUDA kernels", "load the model in bf16 (`torch_dtype=torch.bfloat16`)",
                         Evidence.INF),
    "nvidia.dali": Library("NVIDIA DALI GPU data loading", "use a CPU `DataLoader` pipeline", Evidence.INF),
}
# Longest first, so that `deepspeed.ops` wins over `deepspeed`.
PACKAGES = tuple(sorted(LIBRARIES, key=len, reverse=True))

# Apex advice by what is imported (submodule or class name).
APEX_ADVICE = (
    (("normalization", "FusedLayerNorm", "MixedFusedLayerNorm"), "use `nn.LayerNorm`"),
    (("FusedRMSNorm", "MixedFusedRMSNorm"), "use `nn.RMSNorm`"),
    (("optimizers", "FusedAdam", "FusedLAMB", "FusedSGD", "FusedNovoGrad"),
     "use `torch.optim.AdamW` / `torch.optim.SGD`"),
    (("amp",), "use `torch.autocast(\"neuron\", dtype=torch.bfloat16)` (bf16 needs no loss scaling)"),
    (("parallel", "SyncBatchNorm", "DistributedDataParallel"),
     "use `torch.nn.parallel.DistributedDataParallel` / `nn.SyncBatchNorm`"),
)

BNB_CONFIG_SUFFIX = "BitsAndBytesConfig"


def _flash_attention_choice(node: cst.BaseExpression) -> str | None:
    """``"flash_attention_2"`` when ``node`` is that string or a conditional that may yield it."""
    if isinstance(node, cst.IfExp):
        return _flash_attention_choice(node.body) or _flash_attention_choice(node.orelse)
    value = string_value(node)
    return value if value is not None and value.startswith("flash_attention") else None


def _apex_advice(module: str, names: tuple[str, ...]) -> str | None:
    # What is imported decides first (`from apex.normalization import FusedRMSNorm`), then the module.
    for parts in (set(names), set(module.split(".")[1:])):
        for keys, advice in APEX_ADVICE:
            if parts & set(keys):
                return advice
    return None


class CudaOnlyLibrary(Transform):
    """Finds imports of CUDA-only libraries and the Hugging Face switches that load them.

    What it does:
        Reports every import statement (and `importlib.import_module("...")` with a literal name)
        of a library whose kernels exist only for NVIDIA GPUs: flash_attn, xformers, flashinfer,
        apex, bitsandbytes, deepspeed, transformer_engine, liger_kernel, mamba_ssm, causal_conv1d,
        pynvml/nvidia_smi/GPUtil/nvitop, cupy, pycuda, numba.cuda, torchao, TensorRT, DALI,
        AutoGPTQ/AutoAWQ/ExLlamaV2.
        Each finding names the package, says whether it is a HARD dependency (top-level,
        unguarded import) or OPTIONAL (inside `try/except ImportError`, under an `if` guard such
        as `if is_flash_attn_available():`, or imported lazily inside a function), and gives the
        replacement. Also reports `BitsAndBytesConfig(...)`, `load_in_8bit=` / `load_in_4bit=`
        (unless `False`), and `attn_implementation="flash_attention_2"` /
        `use_flash_attention_2=True` in calls.

    Why on TorchNeuron:
        These libraries ship CUDA (or Triton) kernels only; none has a Trainium build. An
        OPTIONAL import usually has a stock-PyTorch fallback already: make sure the fallback is
        what runs on Neuron. A HARD import makes the module fail to import without the package.

    Example:
        from flash_attn import flash_attn_func
        import bitsandbytes as bnb
        model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)

    Use instead:
        `F.scaled_dot_product_attention` for flash_attn/xformers; `nn.LayerNorm` / `nn.RMSNorm`
        for fused norms; `torch.optim.AdamW` for fused or 8-bit optimizers; bf16 weights instead
        of bitsandbytes quantization; FSDP2 (`fully_shard`) or DDP instead of DeepSpeed;
        `neuron-ls` / `neuron-top` instead of NVML; NKI kernels (`torch_neuronx.nki_op`, check
        aws-neuron/nki-library) for custom kernels.

    Fix safety:
        Report only: choosing a replacement changes numerics, memory use or the API.

    Evidence:
        INF/3P: reference F3 (CUDA-only libraries; SDPA lowering to an NKI flash-attention kernel
        is 3P); DOC: F14 (GPU introspection tools); DOC-old: F6 (TorchAO).
    """

    id = "NRN903"
    name = "cuda-only-library"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    tokens = (
        b"flash_attn", b"xformers", b"flashinfer", b"apex", b"bitsandbytes", b"deepspeed",
        b"transformer_engine", b"liger_kernel", b"mamba_ssm", b"causal_conv1d", b"nvml",
        b"nvidia_smi", b"GPUtil", b"nvitop", b"cupy", b"pycuda", b"numba", b"torchao",
        b"tensorrt", b"nvidia.dali", b"auto_gptq", b"awq", b"exllamav2", b"load_in_8bit", b"load_in_4bit",
        b"BitsAndBytesConfig",
        b"flash_attention",
    )
    examples = (
        Example("from flash_attn import flash_attn_func\n", None),
        Example("try:\n    import apex\nexcept ImportError:\n    apex = None\n", None),
        Example("model = AutoModel.from_pretrained(name, load_in_8bit=True)\n", None),
    )

    # -- imports -----------------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        self._check_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._check_import(node)

    def _check_import(self, node: cst.Import | cst.ImportFrom) -> None:
        seen: set[str] = set()
        for module, names in imported_modules(node):
            package = module_matches(module, PACKAGES)
            if package is None and module == "numba" and "cuda" in names:
                package = "numba.cuda"
            if package is None or package in seen:
                continue
            seen.add(package)
            self._report_package(node, package, module, names, code(self.ctx, node))

    def _report_package(self, node: cst.CSTNode, package: str, module: str, names: tuple[str, ...],
                        shown: str) -> None:
        lib = LIBRARIES[package]
        instead = lib.instead
        if package == "apex":
            instead = _apex_advice(module, names) or instead
        dep = classify_import(self.ctx)
        top = package.split(".")[0] if package != "deepspeed.ops" else "deepspeed"
        self.report(
            node,
            f"`{shown}` ({dep.label}): `{top}` ({lib.what}) {lib.verdict}; {instead}",
            evidence=lib.evidence,
        )

    # -- calls -------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified in ("importlib.import_module", "__import__") or (
            qualified is None and isinstance(node.func, cst.Name) and node.func.value == "__import__"
        ):
            self._check_dynamic_import(node)
            return
        if qualified is not None and qualified.rsplit(".", 1)[-1] == BNB_CONFIG_SUFFIX:
            self.report(
                node,
                "`BitsAndBytesConfig(...)`: bitsandbytes quantization runs CUDA kernels only; "
                "load the model in bf16 (`torch_dtype=torch.bfloat16`) instead",
                evidence=Evidence.INF,
            )
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key in ("load_in_8bit", "load_in_4bit") and not is_false_literal(arg.value):
                self.report(
                    arg,
                    f"`{key}=`: bitsandbytes quantization runs CUDA kernels only; "
                    "load the model in bf16 (`torch_dtype=torch.bfloat16`) instead",
                    evidence=Evidence.INF,
                )
            elif key == "attn_implementation":
                value = _flash_attention_choice(arg.value)
                if value is not None:
                    self.report(
                        arg,
                        f"`attn_implementation=\"{value}\"` needs the CUDA-only flash_attn package; "
                        "use `attn_implementation=\"sdpa\"`",
                        evidence=Evidence.THIRD_PARTY,
                    )
            elif key == "use_flash_attention_2" and not is_false_literal(arg.value):
                self.report(
                    arg,
                    "`use_flash_attention_2=` needs the CUDA-only flash_attn package; "
                    "use `attn_implementation=\"sdpa\"`",
                    evidence=Evidence.THIRD_PARTY,
                )

    def _check_dynamic_import(self, node: cst.Call) -> None:
        arg = argument(node, "name", 0)
        module = string_value(arg.value) if arg is not None else None
        if module is None:
            return
        package = module_matches(module, PACKAGES)
        if package is not None:
            self._report_package(node, package, module, (), code(self.ctx, node))
