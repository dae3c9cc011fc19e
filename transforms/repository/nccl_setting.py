"""NRN613: NCCL settings in launch scripts, Makefiles and Dockerfiles (``NCCL_*``, ``TORCH_NCCL_*``, ``--backend nccl``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import (COMMAND_KINDS, DISTRIBUTED_URL, NRT_ENV_URL, code_lines,
                                               make_assignment)

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.transform import Evidence, Example, Safety

_ASSIGNMENT = re.compile(r"(?<![\w$])(?P<name>(?:TORCH_)?NCCL_[A-Z0-9_]+)=")
_ENV_SPACE_FORM = re.compile(r"^[ \t]*ENV[ \t]+(?P<name>(?:TORCH_)?NCCL_[A-Z0-9_]+)[ \t]+\S")
_MAKE_FORM = make_assignment(r"(?:TORCH_)?NCCL_[A-Z0-9_]+")  # a Makefile's ``export NCCL_DEBUG = INFO``
_BACKEND = re.compile(r"--(?:dist[_-])?backend[= \t]+[\"']?nccl\b")


class NcclSetting(LineRule):
    """Finds NCCL settings in launch scripts, Makefiles and Dockerfiles: `NCCL_*` / `TORCH_NCCL_*` variables and `--backend nccl` arguments.

    What it does:
        Reports each one with the Neuron side of it: the `"neuron"` process-group backend and
        the Neuron runtime's own variables.

    Why on TorchNeuron:
        NCCL is NVIDIA's collective library; TorchNeuron's distributed jobs use the `"neuron"`
        backend, which reads none of the NCCL variables. Multi-node jobs need EFA installed and
        configured on every node instead.

    Example:
        export NCCL_DEBUG=INFO
        torchrun --nproc_per_node=8 train.py --backend nccl

    Use instead:
        torchrun --nproc_per_node=64 train.py --backend neuron

    Fix safety:
        Report only: no Neuron counterpart of the NCCL variables is documented, and a
        `--backend` argument is read by the script, whose Python the Python rules migrate.

    Evidence:
        DOC: the TorchNeuron distributed guide (backend `"neuron"`, EFA for multi-node). Not
        established here: any mapping from NCCL tuning variables to Neuron runtime variables.
    """

    id = "NRN613"
    name = "nccl-setting"
    kinds = COMMAND_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"NCCL_", b"nccl")
    references = (DISTRIBUTED_URL, NRT_ENV_URL)
    examples = (Example("export NCCL_DEBUG=INFO\n"),)

    def check(self, doc: TextDocument) -> None:
        for line in code_lines(doc):
            for match in (*_ASSIGNMENT.finditer(line.code), *_ENV_SPACE_FORM.finditer(line.code),
                          *_MAKE_FORM.finditer(line.code)):
                self.flag(Span(line.index, match.start("name"), match.end()),
                          f"`{match.group('name')}` is an NCCL setting; TorchNeuron's `\"neuron\"` backend does not "
                          "read it (no Neuron counterpart is documented; multi-node jobs need EFA on every node)")
            for match in _BACKEND.finditer(line.code):
                self.flag(Span(line.index, match.start(), match.end()),
                          "the job asks for the NCCL backend; on Trainium the process-group backend is `neuron` "
                          "(the script's Python must accept that value)")
