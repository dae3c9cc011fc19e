"""NRN623: a Cog container built for an NVIDIA GPU (``build: gpu: true``, ``cuda: "11.8"``)."""

from __future__ import annotations

import re

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.kinds import SourceKind
from neuronize.sources.lines import code_part
from neuronize.sources.requirements import TOP_KEY
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import CONTAINER_URL, DLC_URL, NEURON_IMAGE

#: a setting of the ``build:`` section one level in: ``gpu: true``, ``cuda: "11.8"``
_SETTING = re.compile(r"^(?P<indent>[ \t]+)(?P<key>gpu|cuda|cudnn)[ \t]*:[ \t]*(?P<value>[^#]*?)[ \t]*$")
_WHY = {
    "gpu": "builds the image on NVIDIA's CUDA base for a GPU host",
    "cuda": "picks the CUDA toolkit of the image",
    "cudnn": "picks the cuDNN library of the image",
}


class CogGpuBuild(LineRule):
    """Finds a Cog container (`cog.yaml`) built for an NVIDIA GPU: `gpu: true`, `cuda:`, `cudnn:`.

    What it does:
        Reports each of those settings of the `build:` section. Its `python_packages:` are read
        by the requirements rules (CUDA torch builds and wheel indexes, the `torch-neuronx`
        family).

    Why on TorchNeuron:
        Cog builds its GPU images on NVIDIA's CUDA base, with the CUDA and cuDNN versions these
        settings pick; Trainium cannot use them. A Trainium container starts from a Neuron
        deep-learning container, which ships torch-neuronx and the Neuron runtime, and runs with
        the Neuron devices passed in.

    Example:
        build:
          gpu: true
          cuda: "11.8"

    Use instead:
        A Dockerfile for Trainium beside the Cog one, `FROM` a Neuron deep-learning container
        (the PyTorch Training (TorchNeuron) image).

    Fix safety:
        Report only: the CUDA hosts of the project still build and serve this image.

    Evidence:
        DOC: the Neuron container guide and the DLC image list.
    """

    id = "NRN623"
    name = "cog-gpu-build"
    kinds = (SourceKind.COG,)
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "medium"
    tokens = (b"gpu", b"cuda", b"cudnn")
    references = (CONTAINER_URL, DLC_URL)
    examples = (Example("build:\n  gpu: true\n  cuda: \"11.8\"\n"), Example("build:\n  gpu: false\n", finds=False))

    def check(self, doc: TextDocument) -> None:
        in_build, level = False, None
        for index, line in enumerate(doc.lines):
            code = code_part(line.text).rstrip()
            if (top := TOP_KEY.match(code)) is not None:
                in_build, level = top.group("key") == "build", None
                continue
            found = _SETTING.match(code) if in_build else None
            if found is None or level not in (None, found.group("indent")):
                continue
            level = found.group("indent")  # the build section's own keys, not a nested list's
            key, value = found.group("key"), found.group("value").strip("\"'")
            if key == "gpu" and value.lower() != "true":
                continue
            self.flag(Span(index, found.start("key"), found.end("value")),
                      f"`{key}: {found.group('value')}` {_WHY[key]}: Trainium cannot use it; for Trainium, "
                      f"{NEURON_IMAGE}, in a Dockerfile of its own")
