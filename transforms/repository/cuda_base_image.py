"""NRN621: Dockerfiles built on CUDA images (``FROM nvidia/cuda``, CUDA-tagged ``pytorch/pytorch``, NGC)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import DLC_URL, NEURON_IMAGE, SETUP_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Evidence, Example, Safety

_FROM = re.compile(r"^[ \t]*FROM[ \t]+(?:--platform=\S+[ \t]+)?(?P<image>\S+)", re.IGNORECASE)
_ARG = re.compile(r"^[ \t]*ARG[ \t]+(?P<name>\w+)=[\"']?(?P<image>[^\s\"']+)", re.IGNORECASE)
_CUDA_IMAGE = re.compile(r"(?i)(?:^|/)nvidia/|^nvcr\.io/|cuda|cudnn|[-_.:]cu\d{2,3}(?![\d])")


class CudaBaseImage(LineRule):
    """Finds Dockerfiles built on CUDA images: `nvidia/cuda`, CUDA-tagged `pytorch/pytorch`, NGC (`nvcr.io`) images.

    What it does:
        Reports each `FROM` of a CUDA image (also through an `ARG` default that a `FROM` uses)
        with the Neuron way to build the container.

    Why on TorchNeuron:
        A CUDA image carries CUDA libraries and a CUDA build of torch, none of which runs on
        Trainium. Neuron publishes deep-learning containers (a PyTorch Training image with
        TorchNeuron) and DLAMIs with torch-neuronx and the Neuron runtime installed.

    Example:
        FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04

    Use instead:
        FROM <the Neuron PyTorch Training (TorchNeuron) image listed in the Neuron DLC guide>

    Fix safety:
        Report only: the image tag to use depends on the Neuron release, and the rest of the
        Dockerfile (toolkit installs, CUDA variables) changes with it.

    Evidence:
        DOC: the Neuron DLC installation guide lists the images; the setup page lists DLAMI,
        DLC and manual installation.
    """

    id = "NRN621"
    name = "cuda-base-image"
    kinds = (SourceKind.DOCKERFILE,)
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "medium"
    tokens = (b"FROM", b"from")
    references = (DLC_URL, SETUP_URL)
    examples = (Example("FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04\n"),)

    def check(self, doc: TextDocument) -> None:
        lines = list(code_lines(doc))
        bases = " ".join(m.group("image") for line in lines if (m := _FROM.match(line.code)))
        for line in lines:
            match = _FROM.match(line.code) if line.instruction == "FROM" else None
            if match is None and line.instruction == "ARG":
                match = _ARG.match(line.code)  # `ARG BASE=nvidia/cuda:...` used as `FROM ${BASE}`
                if match is not None and "$" + match.group("name") not in bases.replace("{", ""):
                    match = None
            if match is not None and _CUDA_IMAGE.search(match.group("image")):
                image = match.group("image")
                self.flag(Span(line.index, match.start("image"), match.end("image")),
                          f"`{image}` is a CUDA image; {NEURON_IMAGE}")
