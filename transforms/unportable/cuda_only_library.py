"""NRN903: imports of CUDA-only libraries (flash_attn, xformers, apex, bitsandbytes, ...)."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.device_choice import stored_value
from neuronize.transforms._helpers.device_model import cuda_keeping, pins_outside_cuda_code
from neuronize.transforms._helpers.imports import classify_import, imported_modules
from neuronize.transforms._helpers.literals import is_true, string_value, switches_off
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name
from neuronize.analysis.syntax import is_main_test
from neuronize.analysis.cuda_packages import NKI_PATH_KERNELS, PACKAGES, imported_package, is_cuda_extension_module

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

#: Hugging Face quantization configs whose kernels have no Neuron build, and what runs them
QUANTIZATION_CONFIGS = {
    "BitsAndBytesConfig": "bitsandbytes quantization runs CUDA kernels only",
    "GPTQConfig": "GPTQ quantization runs GPTQModel / auto-gptq kernels (ExLlama, Marlin: CUDA; the CPU's a slow "
                  "fallback), none of them for Neuron",
    "AwqConfig": "AWQ quantization runs AutoAWQ's CUDA kernels",
}
#: the mark a hub id gives a checkpoint published already quantized (``TheBloke/Mistral-7B-AWQ``,
#: ``unsloth/llama-3-8b-bnb-4bit``): the checkpoint's config loads it on that method's kernels
QUANTIZED_CHECKPOINT = re.compile(r"(?i)(?:^|[-_./])(awq|gptq|bnb-4bit|bnb-8bit)(?=$|[-_.])")
#: each mark, by the config of :data:`QUANTIZATION_CONFIGS` its checkpoint carries
QUANTIZED_BY = {"awq": "AwqConfig", "gptq": "GPTQConfig", "bnb-4bit": "BitsAndBytesConfig",
                "bnb-8bit": "BitsAndBytesConfig"}
#: the methods of diffusers' models and pipelines that switch attention to xformers' kernels, and
#: the edit group of the device edits beside a switch that runs whenever its code does: the
#: switch raises where CUDA is not available, so the program never reaches Neuron past it
XFORMERS_SWITCHES = ("enable_xformers_memory_efficient_attention", "set_use_memory_efficient_attention_xformers")
XFORMERS_ATTENTION = "devices beside attention switched to xformers"
#: the loaders of a checkpoint's other parts, which read no weights
NOT_MODELS = ("Tokenizer", "TokenizerFast", "Processor", "Config", "FeatureExtractor")
#: the edit group of the placements beside a model quantized on CUDA-only kernels (policy step 7):
#: the model stays on CUDA's quantized kernels, so inputs moved to Neuron would meet it nowhere
QUANTIZED_ON_CUDA = "devices beside a model quantized by CUDA-only kernels"
#: the loaders of a CUDA-only package that build a model on its kernels
QUANTIZED_LOADERS = ("from_pretrained", "from_quantized")
#: calls that switch attention to a FlashAttention (or other CUDA-only) kernel library:
#: PyTorch's FlashAttention implementation switch, diffusers' attention backends
FLASH_SWITCHES = ("torch.nn.attention.activate_flash_attention_impl", "set_attention_backend",
                  "attention_backend")
#: diffusers attention backends that run on any device (the rest load CUDA-only libraries)
PORTABLE_BACKENDS = ("native", "_native_math", "_native_npu", "_native_xla", "_native_cpu")
#: ONNX Runtime execution providers that run on NVIDIA GPUs only
ORT_GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")
HUB_LOADERS = ("kernels.get_kernel", "kernels.get_local_kernel", "kernels.get_locked_kernel",
               "kernels.load_kernel", "kernels.kernelize")


def flash_switch(qualified: str | None, func: cst.BaseExpression, node: cst.Call) -> str | None:
    """The backend a call switches attention to, when that backend is CUDA-only, else None.

    ``activate_flash_attention_impl("FA3")``; ``model.set_attention_backend("flash")`` and
    ``with attention_backend("_flash_3_hub"):`` (diffusers), whose non-native backends (flash,
    sage, xformers, flex on CUDA...) load CUDA kernel libraries."""
    last = qualified or (func.attr.value if isinstance(func, cst.Attribute) else
                         func.value if isinstance(func, cst.Name) else "")
    if not last.endswith(FLASH_SWITCHES) or not node.args:
        return None
    value = string_value(node.args[0].value)
    if value is None:
        return None
    if last == FLASH_SWITCHES[0]:
        return value
    portable = value.startswith(PORTABLE_BACKENDS) or value in ("flex", "_native_flex")
    return None if portable else value


def _flash_attention_choice(node: cst.BaseExpression) -> str | None:
    """``"flash_attention_2"`` when ``node`` is that string or a conditional that may yield it."""
    if isinstance(node, cst.IfExp):
        return _flash_attention_choice(node.body) or _flash_attention_choice(node.orelse)
    value = string_value(node)
    return value if value is not None and value.startswith("flash_attention") else None


def _runs_conditionally(ctx: FileContext) -> bool:
    """The node being visited runs only where a test of its function (or module) lets it: under
    an ``if`` (not the main block's), in a conditional expression or a ``try:``."""
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.IfExp, cst.Try)) or isinstance(anc, cst.If) and not is_main_test(anc.test):
            return True
    return False


def _quantized_checkpoint(ctx: FileContext, call: cst.Call) -> tuple[str, str] | None:
    """The hub id ``call`` (a model's ``from_pretrained``) loads, where it names a checkpoint
    published quantized (:data:`QUANTIZED_CHECKPOINT`): a literal, or (read at module level) a
    name the module assigns once; with the config (:data:`QUANTIZATION_CONFIGS`) it carries."""
    owner = call.func.value if isinstance(call.func, cst.Attribute) else None
    if last_name(call.func) != "from_pretrained" or owner is None or (last_name(owner) or "").endswith(
            NOT_MODELS) or (arg := argument(call, "pretrained_model_name_or_path", 0)) is None:
        return None
    value = arg.value
    if isinstance(value, cst.Name) and not any(isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in ctx.ancestors()):
        value = stored_value(ctx, value, value.value) or value
    checkpoint = string_value(value)
    mark = QUANTIZED_CHECKPOINT.search(checkpoint) if checkpoint is not None else None
    return (checkpoint, QUANTIZED_BY[mark.group(1).lower()]) if checkpoint is not None and mark else None


def bnb_optimizer(node: cst.BaseExpression) -> bool:
    """A Hugging Face `optim=` name that runs a bitsandbytes optimizer (`"paged_adamw_32bit"`,
    `"adamw_bnb_8bit"`, `"lion_8bit"`, `"ademamix_8bit"`...)."""
    value = (string_value(node) or "").lower()
    return value.startswith("paged_") or "bnb" in value or value.endswith("8bit")


def _apex_advice(module: str, names: tuple[str, ...]) -> str | None:
    # What is imported decides first (`from apex.normalization import FusedRMSNorm`), then the module.
    for parts in (set(names), set(module.split(".")[1:])):
        for keys, advice in APEX_ADVICE:
            if parts & set(keys):
                return advice
    return None


#: what else names a CUDA-only path: the quantization switches, configs and checkpoint marks, execution providers,
#: attention backends and the conventional name of a compiled extension (``*_cuda``)
_OTHER_TOKENS = (b"ExecutionProvider", b"load_in_8bit", b"load_in_4bit", b"BitsAndBytesConfig", b"GPTQConfig",
                 b"AwqConfig", b"AWQ", b"awq", b"GPTQ", b"gptq", b"bnb-", b"optim=", b"flash_attention", b"_cuda",
                 b"attention_backend", b"nvml")


def _tokens() -> tuple[bytes, ...]:
    """The rule's prefilter: every package of the table by its top-level name (a part of torch by
    its own last name, or every file that imports torch would be read), and :data:`_OTHER_TOKENS`."""
    names = (name.rsplit(".", 1)[-1] if name.startswith("torch.") else name.split(".")[0] for name in PACKAGES)
    return tuple(dict.fromkeys((*(name.encode() for name in names), *_OTHER_TOKENS)))


class CudaOnlyLibrary(Transform):
    """Finds imports of CUDA-only libraries and the Hugging Face switches that load them.

    What it does:
        Reports every import statement (and `importlib.import_module("...")` with a literal name)
        of a library whose kernels exist only for NVIDIA GPUs: flash_attn, xformers, flashinfer,
        apex, bitsandbytes, deepspeed, transformer_engine, liger_kernel, mamba_ssm, causal_conv1d,
        pynvml/nvidia_smi/GPUtil/nvitop, cupy, pycuda, numba.cuda, torchao (and its CUDA-only
        parts: float8, MX formats, ops), TensorRT, DALI, AutoGPTQ/AutoAWQ/ExLlama(V2), DeepEP,
        FlashAttention 3 (`flash_attn_interface`, `flash_attn_3`), PyTorch's variable-length
        attention (`torch.nn.attention.varlen`), the serving engines vLLM (without its Neuron
        plugin), SGLang, LightLLM and TensorRT-LLM,
        flash-linear-attention (`fla`), Helion, MegaBlocks, grouped_gemm, fbgemm_gpu, vLLM's
        compiled ops, sgl_kernel, CUTLASS, CUDA symmetric memory
        (`torch.distributed._symmetric_memory`), the neural-rendering and 3D kernels tiny-cuda-nn,
        nvdiffrast, Gaussian-splatting rasterizers (`diff_gaussian_rasterization`, gsplat), cubvh
        and spconv, the Hugging Face kernel hub (`from kernels import
        get_kernel`, and `kernels.get_kernel(...)` calls), and any top-level module named
        `*_cuda` (by convention a compiled CUDA extension). `neuronize explain packages` prints the
        whole table with the path forward for each (stock PyTorch, NKI, or none yet).
        Imports of the project's own packages (`import mamba_ssm.utils` inside `mamba_ssm/`, and
        in the tests and benchmarks of a run that also looks at `mamba_ssm/__init__.py`) and
        relative imports are not dependencies and are not reported: a CUDA-only library's own
        repository gets one finding per dependency, and its kernels are reported where they are
        written (NRN901, NRN902).
        Each finding names the package, says whether it is a HARD dependency (top-level,
        unguarded import) or OPTIONAL (inside `try/except ImportError`, under an `if` guard such
        as `if is_flash_attn_available():`, or imported lazily inside a function), and gives the
        replacement. An OPTIONAL import whose `except ImportError:` sets a function to None that a
        function of the file calls with no test of the fallback's names says so: that path needs
        the package. Also reports `BitsAndBytesConfig(...)`, `GPTQConfig(...)`, `AwqConfig(...)`,
        `from_pretrained` of a checkpoint its hub id marks as published quantized
        (`"TheBloke/Mistral-7B-AWQ"`, `-GPTQ`, `-bnb-4bit`), given as a literal or a name the
        module assigns once,
        `load_in_8bit=` / `load_in_4bit=` (unless `False`), Hugging Face optimizer names that load bitsandbytes
        (`optim="paged_adamw_32bit"`, `"adamw_bnb_8bit"`, `"lion_8bit"`), and
        diffusers' `enable_xformers_memory_efficient_attention()` (holding the file's device edits
        where it runs unguarded), `attn_implementation="flash_attention_2"` /
        `use_flash_attention_2=True` in calls, and switches to FlashAttention kernels:
        `torch.nn.attention.activate_flash_attention_impl("FA3")` and diffusers'
        `set_attention_backend("flash")` / `attention_backend("_flash_3")` (native backends pass).
        Reports ONNX Runtime's GPU execution providers (`"CUDAExecutionProvider"`,
        `"TensorrtExecutionProvider"`) wherever the code names them.

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
        INF/3P: CUDA-only libraries; SDPA lowering to an NKI flash-attention kernel is 3P; DOC: GPU
        introspection tools; DOC-old: TorchAO.
    """

    id = "NRN903"
    name = "cuda-only-library"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "libraries"
    effort = "medium"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/how-to-work-with-nki.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/troubleshooting.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    tokens = _tokens()
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
            package = imported_package(module, names)
            if package is None and is_cuda_extension_module(module) and not self._own(module.split(".")[0]):
                self._report_extension(node, module)
                continue
            if package is None or package in seen or self._own(package):
                continue
            seen.add(package)
            self._report_package(node, package, module, names, short(node, 60, tight=True))

    def _own(self, package: str) -> bool:
        # Inside the library itself (mamba_ssm/ops/... importing mamba_ssm.utils) the import is the
        # project's own module, not a dependency: the kernels are reported where they are written.
        top = package.split(".")[0]
        return self.ctx.roles.is_own_package(top) or top in self.ctx.options.own_packages

    def _report_extension(self, node: cst.CSTNode, module: str) -> None:
        dep = classify_import(self.ctx)
        self.report(node, f"`{short(node, 60, tight=True)}` ({dep.label}): `{module.split('.')[0]}` is by its name a "
                    f"compiled CUDA extension, which does not exist on Trainium; {NKI_PATH_KERNELS}",
                    dependency=dep.kind)

    def _report_package(self, node: cst.CSTNode, package: str, module: str, names: tuple[str, ...],
                        shown: str) -> None:
        lib = PACKAGES[package]
        instead = lib.instead
        if package == "apex":
            instead = _apex_advice(module, names) or instead
        dep = classify_import(self.ctx)
        self.report(
            node,
            f"`{shown}` ({dep.label}): `{package}` ({lib.what}) {lib.verdict}; {instead}",
            evidence=lib.evidence,
            dependency=dep.kind,
        )

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "ExecutionProvider" in node.value and string_value(node) in ORT_GPU_PROVIDERS:
            self.report(node, f"ONNX Runtime's `{string_value(node)}` runs on NVIDIA GPUs only, and ONNX Runtime "
                        "has no documented Neuron provider: keep `CPUExecutionProvider` for ONNX Runtime, or run the "
                        "PyTorch model on `\"neuron\"` (`torch.compile(backend=\"neuron\")`) where Trainium must "
                        "serve it")

    # -- calls -------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified in ("importlib.import_module", "__import__") or (
            qualified is None and isinstance(node.func, cst.Name) and node.func.value == "__import__"
        ):
            self._check_dynamic_import(node)
            return
        if qualified in HUB_LOADERS:
            hub = PACKAGES["kernels"]
            self.report(node, f"`{short(node, 60, tight=True)}` loads from the {hub.what}, which "
                        f"{hub.verdict}; {hub.instead}")
            return
        backend = flash_switch(qualified, node.func, node)
        if backend is not None:
            self.report(node, f"`{short(node, 60, tight=True)}` switches attention to the `{backend}` kernels, "
                        "CUDA-only libraries; on Neuron keep the native backend "
                        f"(`F.scaled_dot_product_attention`)", evidence=Evidence.THIRD_PARTY)
            return
        config = qualified.rsplit(".", 1)[-1] if qualified is not None else ""
        if config in QUANTIZATION_CONFIGS:
            self.report(
                node,
                f"`{config}(...)`: {QUANTIZATION_CONFIGS[config]}; "
                "load the model in bf16 (`torch_dtype=torch.bfloat16`) instead",
                evidence=Evidence.INF, pins=pins_outside_cuda_code(self.ctx, QUANTIZED_ON_CUDA),
            )
            return
        if last_name(node.func) in XFORMERS_SWITCHES and not (node.args and switches_off(node.args[0].value)):
            if cuda_keeping(self.ctx) is None:  # code that runs only on CUDA keeps its switch
                # a switch given a value (`set_use_memory_efficient_attention_xformers(valid)`) may be off
                guarded = _runs_conditionally(self.ctx) or bool(node.args) and not is_true(node.args[0].value)
                self.report(node, f"`{short(node, 60, tight=True)}` switches attention to xformers' kernels, which "
                            "are CUDA-only (diffusers raises where CUDA is not available); on Neuron keep the default "
                            "attention (PyTorch SDPA)", evidence=Evidence.THIRD_PARTY,
                            pins=None if guarded else XFORMERS_ATTENTION)
            return
        quantized = _quantized_checkpoint(self.ctx, node)
        if quantized is not None:
            checkpoint, config = quantized
            self.report(node, f"`{short(node.func, 50)}(\"{checkpoint}\")` loads a checkpoint published quantized: "
                        f"{QUANTIZATION_CONFIGS[config]}; load the model it was quantized from in bf16 "
                        "(`torch_dtype=torch.bfloat16`) instead", evidence=Evidence.INF,
                        pins=pins_outside_cuda_code(self.ctx, QUANTIZED_ON_CUDA))
        package = imported_package(qualified) if qualified is not None else None
        if package is not None and PACKAGES[package].cuda_only and last_name(node.func) in QUANTIZED_LOADERS:
            self.report(node, f"`{short(node.func, 50)}(...)` loads a model onto {PACKAGES[package].what}: "
                        f"{PACKAGES[package].instead}", evidence=Evidence.INF, pins=pins_outside_cuda_code(self.ctx, QUANTIZED_ON_CUDA))
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key in ("load_in_8bit", "load_in_4bit") and not switches_off(arg.value):
                self.report(
                    arg,
                    f"`{key}=`: bitsandbytes quantization runs CUDA kernels only; "
                    "load the model in bf16 (`torch_dtype=torch.bfloat16`) instead",
                    evidence=Evidence.INF, pins=pins_outside_cuda_code(self.ctx, QUANTIZED_ON_CUDA),
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
            elif key == "optim" and bnb_optimizer(arg.value):
                self.report(arg, f"`optim=\"{string_value(arg.value)}\"` is a bitsandbytes optimizer (CUDA kernels "
                            "only); on Trainium use `optim=\"adamw_torch\"`", evidence=Evidence.THIRD_PARTY)
            elif key == "use_flash_attention_2" and not switches_off(arg.value):
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
        package = imported_package(module)
        if package is not None and not self._own(package):
            self._report_package(node, package, module, (), short(node, 60, tight=True))
