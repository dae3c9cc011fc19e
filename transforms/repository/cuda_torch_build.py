"""NRN601: CUDA builds of torch pinned in requirements (``torch==2.13.0+cu121``)."""

from __future__ import annotations

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.lines import Edit
from neuronize.sources.requirements import Requirement
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import DEPENDENCY_KINDS, SETUP_URL, before_neuron, cuda_build_message, dependency_items


class CudaTorchBuild(LineRule):
    """Finds `torch`, `torchvision` and `torchaudio` pinned to a CUDA build (`+cu121` local version).

    What it does:
        In requirements files and `pyproject.toml` dependency tables, drops the `+cuXXX` local
        version of a `torch` / `torchvision` / `torchaudio` pin: `torch==2.13.0+cu121` becomes
        `torch==2.13.0`. Other pins, comments, order and quoting stay as written. A pin of a
        release that no `torch-neuronx` family serves (`torch==1.8.1+cu111`, before 2.13) is
        reported instead: the plain release gains Trainium nothing there.

    Why on TorchNeuron:
        A `+cuXXX` build exists only on PyTorch's CUDA wheel index. TorchNeuron runs on the
        regular `torch` release of the same version with the matching `torch-neuronx` family
        (torch 2.13 -> `torch-neuronx==2.13.*`, torch 2.14 -> `2.14.*`), so the CUDA pin cannot be
        installed next to it.

    Example:
        torch==2.13.0+cu121

    Use instead:
        torch==2.13.0

    Fix safety:
        Unsafe: on a CUDA host the plain version may resolve to a different build than the
        `+cu121` one (on Linux x86_64 the PyPI wheel bundles its own CUDA version). Check the
        CUDA host's install after the change.

    Evidence:
        DOC for the TorchNeuron families (Neuron setup page); INF that the plain release is the
        build to pin.
    """

    id = "NRN601"
    name = "cuda-torch-build"
    kinds = DEPENDENCY_KINDS
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    tokens = (b"+cu",)
    references = (SETUP_URL,)
    examples = (Example("torch==2.13.0+cu121\n", "torch==2.13.0\n"), Example("torch==2.13.0\n", finds=False),
                Example("torch==1.8.1+cu111\ntorchvision==0.9.1+cu111\n"))

    def check(self, doc: TextDocument) -> None:
        for item in dependency_items(doc):
            if not isinstance(item, Requirement):
                continue
            message = cuda_build_message(item)
            if message is not None and before_neuron(item):
                self.flag(Span(item.line, item.start, item.end),
                          f"`{item.name}` is pinned to the CUDA build `+{item.local}` of a release that no "
                          "`torch-neuronx` family serves (the first is torch 2.13): a plain pin would gain "
                          "Trainium nothing and may install another CUDA build on the CUDA box; move the "
                          "project to a torch with a Neuron family first")
            elif message is not None:
                end = item.local_start + 1 + len(item.local)
                self.propose(Span(item.line, item.start, item.end), [Edit(item.line, item.local_start, end, "")],
                             message)
