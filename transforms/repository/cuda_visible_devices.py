"""NRN611: ``CUDA_VISIBLE_DEVICES`` set in launch scripts and Dockerfiles."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import (
    COMMAND_KINDS,
    DIST_TUTORIAL_URL,
    NRT_ENV_URL,
    RUNTIME_URL,
    code_lines,
    launches_processes,
    make_assignment,
)

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.lines import Edit
from neuronize.sources.shell import MAKE
from neuronize.transform import Evidence, Example, Safety

_ASSIGN = re.compile(r"(?<![\w$])CUDA_VISIBLE_DEVICES(?P<eq>=)"
                     r"(?P<value>\"[^\"]*\"|'[^']*'|(?:\$\([^()]*\)|\$\{[^}]*\}|[^\s;&|)])*)")
_MAKE_ASSIGN = make_assignment("CUDA_VISIBLE_DEVICES")
_ENV_SPACE_FORM = re.compile(r"^[ \t]*ENV[ \t]+CUDA_VISIBLE_DEVICES[ \t]+\S")
_WHY = ("GPU indices are not NeuronCore indices: NEURON_RT_VISIBLE_CORES counts logical NeuronCores "
        "(a Trainium2 chip has 4 at the default logical-core setting), so check the figures")


class CudaVisibleDevices(LineRule):
    """Finds `CUDA_VISIBLE_DEVICES` set in shell scripts, Makefiles and Dockerfiles.

    What it does:
        Next to each assignment (`export CUDA_VISIBLE_DEVICES=0,1`, `CUDA_VISIBLE_DEVICES=0 python
        train.py`, `ENV CUDA_VISIBLE_DEVICES=0`) adds `NEURON_RT_VISIBLE_CORES` with the same value,
        keeping the CUDA variable for CUDA hosts. In a script that starts its workers with a
        launcher (`torchrun`, `accelerate launch`, `deepspeed`) it only reports: there the
        `"neuron"` process group gives each process its own core and expects exactly one. An
        empty value (hiding every GPU for a CPU run) is reported too, and so is a Makefile
        variable (`CUDA_VISIBLE_DEVICES ?= 0,1`), where a word added after the value would
        become part of it; a Makefile recipe line is shell and gets the fix.

    Why on TorchNeuron:
        The Neuron runtime reads `NEURON_RT_VISIBLE_CORES` (a core, a list or a range such as
        `0-3`) to choose the NeuronCores a process uses; `CUDA_VISIBLE_DEVICES` means nothing to it.

    Example:
        export CUDA_VISIBLE_DEVICES=0,1

    Use instead:
        export CUDA_VISIBLE_DEVICES=0,1 NEURON_RT_VISIBLE_CORES=0,1

    Fix safety:
        Unsafe: GPU indices are not NeuronCore indices. The same numbers select logical
        NeuronCores, of which a Trainium2 chip has 4; check that the figures still mean what the
        script wants. A core held by one process cannot be used by another until it exits.

    Evidence:
        DOC: the Neuron runtime configuration guide and environment-variable reference describe
        `NEURON_RT_VISIBLE_CORES`. That the `"neuron"` process group sets it per process from
        `LOCAL_RANK` when unset, and expects one core per process, is read in torch-neuronx's
        source (SRC), hence report-only under a launcher.
    """

    id = "NRN611"
    name = "cuda-visible-devices"
    kinds = COMMAND_KINDS
    safety = Safety.UNSAFE
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"CUDA_VISIBLE_DEVICES",)
    references = (RUNTIME_URL, NRT_ENV_URL, DIST_TUTORIAL_URL)
    examples = (
        Example("export CUDA_VISIBLE_DEVICES=0,1\npython train.py\n",
                "export CUDA_VISIBLE_DEVICES=0,1 NEURON_RT_VISIBLE_CORES=0,1\npython train.py\n"),
        Example("export CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node=2 train.py\n"),
    )

    def check(self, doc: TextDocument) -> None:
        if any("NEURON_RT_VISIBLE_CORES" in line.text for line in doc.lines):
            return  # already set for Neuron: the script's author decided
        launcher = launches_processes(doc)
        for line in code_lines(doc):
            if line.instruction == MAKE:
                make = _MAKE_ASSIGN.match(line.code)
                if make is not None:  # in make, a word added after the value would be part of it
                    self.flag(Span(line.index, make.start("name"), len(line.code.rstrip())),
                              "`CUDA_VISIBLE_DEVICES` does not select NeuronCores; export `NEURON_RT_VISIBLE_CORES` "
                              f"from the Makefile as well ({_WHY})")
                continue
            if _ENV_SPACE_FORM.match(line.code):
                start = line.code.index("CUDA_VISIBLE_DEVICES")
                self.flag(Span(line.index, start, len(line.code.rstrip())),
                          f"`CUDA_VISIBLE_DEVICES` does not select NeuronCores; set `NEURON_RT_VISIBLE_CORES` "
                          f"as well ({_WHY})")
                continue
            for match in _ASSIGN.finditer(line.code):
                span = Span(line.index, match.start(), match.end())
                value = match.group("value")
                if value.strip("\"'") in ("", "-1"):
                    self.flag(span, "an empty `CUDA_VISIBLE_DEVICES` hides every GPU to run on the CPU; the Neuron "
                              "runtime has no documented way to hide all NeuronCores like this: make the script's "
                              "device choice explicit (`--device cpu`)")
                elif launcher:
                    self.flag(span, "`CUDA_VISIBLE_DEVICES` does not select NeuronCores; under a launcher the "
                              "`\"neuron\"` process group gives each process its own core (from `LOCAL_RANK`) and "
                              "expects exactly one: limit the number of processes instead of setting "
                              "`NEURON_RT_VISIBLE_CORES` for all of them", evidence=Evidence.SRC)
                else:
                    self.propose(span, [Edit(line.index, match.end(), match.end(), f" NEURON_RT_VISIBLE_CORES={value}")],
                                 f"`CUDA_VISIBLE_DEVICES` does not select NeuronCores; added "
                                 f"`NEURON_RT_VISIBLE_CORES={value}` beside it ({_WHY})")
