"""NRN622: CUDA toolkit installs and settings in Dockerfiles and scripts (``apt-get install cuda-*``, ``TORCH_CUDA_ARCH_LIST``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import COMMAND_KINDS, DLC_URL, NEURON_IMAGE, SETUP_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.transform import Evidence, Example, Safety

_INSTALL = re.compile(r"\b(?:apt-get|apt|yum|dnf|conda|mamba|micromamba)\b[^;&|]*\binstall\b")
_PACKAGE = re.compile(r"(?<![\w.-])(?P<package>cuda-[\w.-]+|cuda(?==)|libcudnn[\w.-]*|libnccl[\w.-]*|"
                      r"nvidia-cuda-toolkit|cudatoolkit[\w.=-]*|pytorch-cuda[\w.=-]*|cuda-toolkit[\w.=-]*|"
                      r"libcublas[\w.-]*|tensorrt[\w.-]*)")
_SETTING = re.compile(r"(?<![\w$])(?P<name>TORCH_CUDA_ARCH_LIST|CUDA_HOME|CUDA_PATH|CUDACXX|CUDA_ARCH_LIST|FORCE_CUDA|"
                      r"DS_BUILD_\w+)(?:=|[ \t]+(?=\S))")
#: a build of a package's CUDA extensions by its own flag (apex: `pip install --global-option="--cuda_ext"`)
_BUILD_FLAG = re.compile(r"(?<![\w-])(?P<flag>--cuda_ext)\b")


class CudaToolkitInstall(LineRule):
    """Finds CUDA toolkit installs and build settings: `apt-get install cuda-*`, `conda install cudatoolkit`, `TORCH_CUDA_ARCH_LIST`, `CUDA_HOME`.

    What it does:
        Reports CUDA, cuDNN, NCCL and TensorRT packages installed with apt/yum/dnf/conda, the
        variables that steer CUDA builds (`TORCH_CUDA_ARCH_LIST`, `CUDA_HOME`, `FORCE_CUDA`,
        DeepSpeed's `DS_BUILD_*` op builds, ...) and apex's `--cuda_ext` build flag, with the
        Neuron way to set up the environment.

    Why on TorchNeuron:
        Trainium has no CUDA: the toolkit is dead weight, and the builds these variables steer
        (CUDA extensions) have no target there. Neuron's DLAMIs and deep-learning containers come
        with torch-neuronx and the Neuron runtime; custom kernels become NKI kernels.

    Example:
        ENV TORCH_CUDA_ARCH_LIST="8.0;8.6;9.0"
        RUN apt-get update && apt-get install -y cuda-toolkit-12-4

    Use instead:
        # a Neuron DLAMI or deep-learning container; no CUDA toolkit

    Fix safety:
        Report only: the CUDA host's build may still need them; split the Dockerfile or script
        per platform.

    Evidence:
        DOC: the Neuron setup page (DLAMI, DLC, manual installation) and the DLC guide.
    """

    id = "NRN622"
    name = "cuda-toolkit-install"
    kinds = COMMAND_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "medium"
    tokens = (b"cuda", b"CUDA", b"cudnn", b"nccl", b"tensorrt", b"DS_BUILD_")
    references = (SETUP_URL, DLC_URL)
    examples = (Example('ENV TORCH_CUDA_ARCH_LIST="8.0;8.6;9.0"\n'),)

    def check(self, doc: TextDocument) -> None:
        installing = False  # an install command continued over several lines
        for line in code_lines(doc):
            installing = installing or bool(_INSTALL.search(line.code))
            if installing:
                for match in _PACKAGE.finditer(line.code):
                    self.flag(Span(line.index, match.start(), match.end()),
                              f"`{match.group('package')}` installs NVIDIA CUDA software, which Trainium cannot use; "
                              f"{NEURON_IMAGE}")
            installing = installing and line.code.rstrip().endswith("\\")
            for match in _BUILD_FLAG.finditer(line.code):
                self.flag(Span(line.index, match.start(), match.end()),
                          f"`{match.group('flag')}` builds apex's CUDA extensions, which have no target on Trainium; "
                          "its fused layers and optimizers have stock PyTorch replacements (NRN903 names them)")
            for match in _SETTING.finditer(line.code):
                self.flag(Span(line.index, match.start(), match.end("name")),
                          f"`{match.group('name')}` steers CUDA builds, which have no target on Trainium; "
                          "custom kernels become NKI kernels, and the environment comes from a Neuron DLAMI or "
                          "deep-learning container")
