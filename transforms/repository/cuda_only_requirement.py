"""NRN603: CUDA-only packages in requirements (``nvidia-*`` wheels, ``cupy-cuda12x``, flash-attn...)."""

from __future__ import annotations

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.requirements import Requirement
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import (CUDA_ONLY_DISTRIBUTIONS, DEPENDENCY_KINDS, SETUP_URL, cuda_only_message,
                                               dependency_items, other_framework)

class CudaOnlyRequirement(LineRule):
    """Finds CUDA-only packages in requirements: `nvidia-*` runtime wheels, `cupy-cuda*`, and the CUDA-only libraries of the Python rules.

    What it does:
        Reports requirements on NVIDIA's runtime wheels (`nvidia-cudnn-cu12`, ...), CuPy CUDA
        builds, and the packages the Python rule `cuda-only-library` (NRN903) reports when
        imported (flash-attn, xformers, bitsandbytes, apex, deepspeed, transformer-engine, ...),
        each with its path forward. The list is the Python rules' own table. A file that serves
        another framework (named for it, `requirements_flax.txt`, or listing JAX/TensorFlow and no
        PyTorch) is not read: nothing in it runs PyTorch on Trainium.

    Why on TorchNeuron:
        These packages hold CUDA kernels or CUDA runtime libraries; none of them runs on
        Trainium. A requirements file that still lists them cannot be installed (or loads
        nothing useful) on a Trainium host.

    Example:
        flash-attn==2.6.3
        nvidia-cudnn-cu12==9.1.0.70

    Use instead:
        # flash-attn: torch.nn.functional.scaled_dot_product_attention
        # nvidia-*: nothing (torch-neuronx brings the Neuron runtime)

    Fix safety:
        Report only: the code that imports them must change first (see the Python rules'
        findings), and CUDA hosts may still want them in a requirements file of their own.

    Evidence:
        As for the Python rule on each package: DOC for the GPU tools, 3P/INF for the kernel
        libraries; NVIDIA's wheels are CUDA runtime libraries by their own description (INF).
    """

    id = "NRN603"
    name = "cuda-only-requirement"
    kinds = DEPENDENCY_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    tokens = tuple(sorted({b"nvidia", b"cupy", *(k.split("-")[0].encode() for k in CUDA_ONLY_DISTRIBUTIONS)}))
    references = (SETUP_URL, "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html")
    examples = (Example("flash-attn==2.6.3\nnvidia-cudnn-cu12==9.1.0.70\n"),)

    def check(self, doc: TextDocument) -> None:
        items = [item for item in dependency_items(doc) if isinstance(item, Requirement)]
        if other_framework(doc, {item.key for item in items}):
            return
        for item in items:
            message = cuda_only_message(item)
            if message is not None:
                self.flag(Span(item.line, item.start, item.name_end), message)
