"""NRN614: NVIDIA command-line tools in scripts and Dockerfiles (``nvidia-smi``, ``nvcc``)."""

from __future__ import annotations

from neuronize.transforms._helpers.setup_files import COMMAND_KINDS, NVIDIA_TOOL, NVIDIA_TOOL_INSTEAD, TROUBLESHOOTING_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.transform import Evidence, Example, Safety


class NvidiaTool(LineRule):
    """Finds NVIDIA command-line tools (`nvidia-smi`, `nvcc`, `nvidia-docker`) in scripts and Dockerfiles.

    What it does:
        Reports each invocation with the Neuron tool that does the job.

    Why on TorchNeuron:
        A Trainium host has no NVIDIA driver or CUDA toolkit: these commands fail there. The
        Neuron tools list devices and cores (`neuron-ls`) and show utilisation (`neuron-top`).

    Example:
        nvidia-smi --query-gpu=memory.used --format=csv

    Use instead:
        neuron-ls
        neuron-top

    Fix safety:
        Report only: the tools' output differs, so whatever reads it must change too.

    Evidence:
        DOC: the TorchNeuron troubleshooting page uses `neuron-ls` to check devices.
    """

    id = "NRN614"
    name = "nvidia-tool"
    kinds = COMMAND_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"nvidia-smi", b"nvcc", b"nvidia-docker", b"nvidia-container-cli")
    references = (TROUBLESHOOTING_URL,)
    examples = (Example("nvidia-smi --query-gpu=memory.used --format=csv\n"),)

    def check(self, doc: TextDocument) -> None:
        for line in code_lines(doc):
            for match in NVIDIA_TOOL.finditer(line.code):
                tool = match.group("tool")
                self.flag(Span(line.index, match.start(), match.end()),
                          f"`{tool}` is an NVIDIA tool and fails on a Trainium host; {NVIDIA_TOOL_INSTEAD[tool]}")
