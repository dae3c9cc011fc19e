"""NRN615: ``docker run --gpus`` and the NVIDIA container runtime in scripts."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import CONTAINER_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Evidence, Example, Safety

_DOCKER = re.compile(r"\b(?:docker|podman)\b")
_FLAG = re.compile(r"--gpus(?:[= \t]+(?:\"[^\"]*\"|'[^']*'|\S+))?|--runtime[= \t]+nvidia\b")


class DockerGpuFlags(LineRule):
    """Finds containers started with GPUs: `docker run --gpus all`, `--runtime=nvidia`.

    What it does:
        Reports the flag with the way a container gets Neuron devices.

    Why on TorchNeuron:
        `--gpus` and the NVIDIA runtime hand NVIDIA GPUs to the container. A Neuron container
        gets the host's Neuron devices with `--device=/dev/neuron0` (one flag per device), on a
        host with the Neuron driver installed.

    Example:
        docker run --gpus all -it trainer:latest

    Use instead:
        docker run --device=/dev/neuron0 -it trainer:latest

    Fix safety:
        Report only: how many devices the container needs (`/dev/neuron0`, `/dev/neuron1`...)
        depends on the instance and the job.

    Evidence:
        DOC: the Neuron container tutorial runs containers with `--device=/dev/neuron0`.
    """

    id = "NRN615"
    name = "docker-gpu-flags"
    kinds = (SourceKind.SHELL, SourceKind.MAKEFILE)
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"--gpus", b"nvidia")
    references = (CONTAINER_URL,)
    examples = (Example("docker run --gpus all -it trainer:latest\n"),)

    def check(self, doc: TextDocument) -> None:
        docker = False  # a `docker run` continued over several lines
        for line in code_lines(doc):
            docker = docker or bool(_DOCKER.search(line.code))
            if docker:
                for match in _FLAG.finditer(line.code):
                    self.flag(Span(line.index, match.start(), match.end()),
                              f"`{match.group()}` gives the container NVIDIA GPUs; give it Neuron devices with "
                              "`--device=/dev/neuron0` (one flag per device) on a host with the Neuron driver")
            docker = docker and line.code.rstrip().endswith("\\")
