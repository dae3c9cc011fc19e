"""NRN602: PyTorch's CUDA wheel index in requirements (``--index-url .../whl/cu121``)."""

from __future__ import annotations

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.requirements import IndexOption
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import DEPENDENCY_KINDS, SETUP_URL, dependency_items, is_cuda_index


class CudaWheelIndex(LineRule):
    """Finds PyTorch's CUDA wheel indexes (`--index-url https://download.pytorch.org/whl/cu121`).

    What it does:
        Reports `--index-url`, `--extra-index-url` and `--find-links` options of requirements
        files, and index URLs in `pyproject.toml` (`[[tool.uv.index]]`, Poetry sources), that
        point at a CUDA wheel index of PyTorch.

    Why on TorchNeuron:
        That index serves CUDA builds of torch. On Trainium, torch comes from the regular release
        with the `torch-neuronx` family that matches it, installed as the Neuron setup guide
        says (or preinstalled in a Neuron DLAMI or deep-learning container).

    Example:
        --extra-index-url https://download.pytorch.org/whl/cu121
        torch==2.13.0

    Use instead:
        torch==2.13.0
        torch-neuronx==2.13.*  # from the Neuron setup guide's package repository

    Fix safety:
        Report only: the CUDA hosts of the project may still need the index; keep it in a CUDA
        requirements file of its own, and give Trainium one without it.

    Evidence:
        DOC: the Neuron setup page names the torch versions and torch-neuronx families to
        install. Not established here: whether the 2.33 packages are served by the Neuron pip
        repository (`https://pip.repos.neuron.amazonaws.com`) that older releases used.
    """

    id = "NRN602"
    name = "cuda-wheel-index"
    kinds = DEPENDENCY_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"/whl/",)
    references = (SETUP_URL,)
    examples = (Example("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.13.0\n"),)

    def check(self, doc: TextDocument) -> None:
        items = dependency_items(doc)
        for item in items:
            if isinstance(item, IndexOption) and is_cuda_index(item.value):
                self.flag(Span(item.line, item.start, item.end),
                          f"`{item.value}` is PyTorch's CUDA wheel index; on Trainium install the regular torch "
                          "release and its `torch-neuronx` family (Neuron setup guide), or use a Neuron DLAMI "
                          "or deep-learning container; keep this index in a CUDA-only requirements file")
