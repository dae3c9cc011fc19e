"""NRN605: CUDA packages and the NVIDIA channel in conda environment files."""

from __future__ import annotations

import re

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.kinds import SourceKind
from neuronize.sources.requirements import CondaPackage, Requirement, conda_items, normalise
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import NEURON_IMAGE, SETUP_URL, other_framework

_CUDA_PACKAGE = re.compile(r"^(?:cudatoolkit|cudatoolkit-dev|pytorch-cuda|cuda|cuda-[\w.-]+|cudnn|nccl|magma-cuda\d+|"
                           r"cupy|nvidia-[\w.-]+|libcublas[\w.-]*|libcusparse[\w.-]*)$")


class CondaCudaPackage(LineRule):
    """Finds CUDA packages (`cudatoolkit`, `pytorch-cuda`, `cuda-*`, `cudnn`, `nccl`) and the `nvidia` channel in conda environment files.

    What it does:
        Reports each one with the Neuron way to set up the environment. The `pip:` list of the
        same file is read by the requirements rules (CUDA torch builds, CUDA-only packages, the
        `torch-neuronx` family). An environment of another framework (JAX or TensorFlow and no
        PyTorch, or a file named for it) is not read: nothing in it runs PyTorch on Trainium.

    Why on TorchNeuron:
        These packages are NVIDIA's CUDA runtime, compiler and libraries, or the CUDA build of
        PyTorch; Trainium cannot use them. TorchNeuron is installed with pip (`torch` and the
        matching `torch-neuronx` family) or comes preinstalled in a Neuron DLAMI or container.

    Example:
        dependencies:
          - pytorch-cuda=12.1

    Use instead:
        dependencies:
          - pip:
              - torch==2.13.0
              - torch-neuronx==2.13.*

    Fix safety:
        Report only: a CUDA host may still need the environment; keep one file per platform.

    Evidence:
        DOC: the Neuron setup page (pip packages, DLAMI, deep-learning containers). Not
        established here: a conda channel for TorchNeuron.
    """

    id = "NRN605"
    name = "conda-cuda-package"
    kinds = (SourceKind.CONDA,)
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"cuda", b"cudnn", b"nccl", b"nvidia", b"cupy", b"cublas", b"cusparse")
    references = (SETUP_URL,)
    examples = (Example("dependencies:\n  - pytorch-cuda=12.1\n"),)

    def check(self, doc: TextDocument) -> None:
        items = list(conda_items(doc.lines))
        names = {normalise(item.name) for item in items if isinstance(item, CondaPackage) and not item.channel}
        if other_framework(doc, names | {item.key for item in items if isinstance(item, Requirement)}):
            return  # a JAX (or TensorFlow) environment: no PyTorch to run on Trainium
        for item in items:
            if not isinstance(item, CondaPackage):
                continue
            span = Span(item.line, item.start, item.end)
            if item.channel and item.name == "nvidia":
                self.flag(span, "the `nvidia` channel serves CUDA packages, which Trainium cannot use; TorchNeuron "
                          "installs with pip (`torch` and its `torch-neuronx` family)")
            elif not item.channel and (_CUDA_PACKAGE.match(item.name) or item.spec.startswith("nvidia::")):
                self.flag(span, f"`{item.spec}` is NVIDIA CUDA software, which Trainium cannot use; {NEURON_IMAGE}, "
                          "or install `torch` and its `torch-neuronx` family with pip")
