"""NRN604: the torch-neuronx family that matches the pinned torch version."""

from __future__ import annotations

import re

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.kinds import SourceKind
from neuronize.sources.lines import Edit
from neuronize.sources.requirements import CondaPackage, Requirement
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.setup_files import (DEPENDENCY_KINDS, SETUP_URL, dependency_items, plain_version,
                                               torch_family_advice, torch_minor)

#: where torch-neuronx installs: Linux on x86_64 only (a laptop or a Mac still installs the rest)
MARKER = 'platform_system == "Linux" and platform_machine == "x86_64"'
#: the version a conda spec pins (`pytorch=1.7.0`, `pytorch==2.13.0=py3.11_0`, `pytorch::pytorch=2.13`)
_CONDA_PIN = re.compile(r"^(?:[\w-]+::)?pytorch[ \t]*==?[ \t]*(\d+(?:\.\d+)*)")


class TorchNeuronxFamily(LineRule):
    """Finds a torch requirement without the `torch-neuronx` family that runs it on Trainium.

    What it does:
        For `torch==2.13.*` / `torch==2.13.0` (and 2.14) in a requirements file with no
        `torch-neuronx` line, adds `torch-neuronx==2.13.*` after it, limited by an environment
        marker to Linux x86_64. Reports a torch pin with no TorchNeuron family (for example
        2.12 or 2.15), an unpinned torch, a pyproject table (add the line by hand there), and
        conda's own `pytorch` package in an environment file (TorchNeuron installs with pip) or
        in a requirements file (where pip installs it as `torch`).

    Why on TorchNeuron:
        TorchNeuron is the `torch-neuronx` package; each family is built for one PyTorch
        version: `torch-neuronx` 2.13.3.0.* for PyTorch 2.13.0 and 2.14.3.0.* for 2.14.0
        (Neuron 2.33). Install the family that matches the torch version.

    Example:
        torch==2.13.0

    Use instead:
        torch==2.13.0
        torch-neuronx==2.13.*; platform_system == "Linux" and platform_machine == "x86_64"

    Fix safety:
        Unsafe: on a Linux x86_64 host that does not reach the Neuron package repository
        (a CUDA box, a CPU CI) the install then fails; keep the line in a Trainium requirements
        file if those hosts install from this one.

    Evidence:
        DOC: the Neuron setup page lists the families and says to install the one matching the
        torch version. Not established here: which index serves them (PyPI, as this tool could
        check, has no torch-neuronx 2.13 or 2.14).
    """

    id = "NRN604"
    name = "torch-neuronx-family"
    kinds = DEPENDENCY_KINDS
    safety = Safety.UNSAFE
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"torch",)
    references = (SETUP_URL,)
    examples = (Example("torch==2.13.0\n", f"torch==2.13.0\ntorch-neuronx==2.13.*; {MARKER}\n"),)

    def check(self, doc: TextDocument) -> None:
        in_place = doc.kind is SourceKind.REQUIREMENTS  # a line of its own can be added there only
        found = list(dependency_items(doc))
        items = [i for i in found if isinstance(i, Requirement)]
        if any(i.key == "torch-neuronx" for i in items):
            return
        for package in found:  # conda's own `pytorch=1.7.0`: TorchNeuron installs with pip
            if isinstance(package, CondaPackage) and not package.channel and package.name == "pytorch":
                pinned = _CONDA_PIN.match(package.spec)
                family, advice = torch_family_advice(pinned.group(1) if pinned else None)
                self.flag(Span(package.line, package.start, package.end), "conda's `pytorch` package: TorchNeuron "
                          "installs with pip, " + (f"`torch` with `torch-neuronx=={family}` in the `pip:` list"
                                                   if family else f"and {advice}"))
        for item in items:
            if item.key not in ("torch", "pytorch"):
                continue
            span = Span(item.line, item.start, item.end)
            version = plain_version(item)
            family, message = torch_family_advice(version)
            if item.key == "pytorch":  # conda's name: pip's `pytorch` only raises an error on install
                self.flag(span, f"`pytorch` is conda's name for torch, which pip installs as `torch`; {message}")
                continue
            if family is None or version is None or not in_place or doc.lines[item.line].text.rstrip().endswith("\\"):
                self.flag(span, message)
            else:
                line = doc.lines[item.line]
                self.propose(span, [Edit(item.line, len(line.text), len(line.text),
                                         f"{line.ending or doc.newline}torch-neuronx=={family}; {MARKER}")],
                             f"torch {torch_minor(version)} runs on Trainium with `torch-neuronx=={family}`; "
                             "added for Linux x86_64 hosts (they need the Neuron package repository)")
